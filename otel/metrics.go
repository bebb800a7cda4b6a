// Package redisyncotel records what a redisync Client's locks do as OpenTelemetry metrics: how long
// acquisitions wait and holds last, and how often locks are acquired, handed over, lost, abandoned
// and fail to renew, by primitive ("lock", "fair lock", "read lock", "write lock").
//
// It is a module of its own, so that the library does not depend on OpenTelemetry:
//
//	m, err := redisyncotel.New(otel.GetMeterProvider())
//	c, err := redisync.New(opt, m.Option())
//
// The instruments (meter "github.com/redisync/redisync"):
//
//	redisync.lock.wait.duration     histogram, s   from the call to the acquisition
//	redisync.lock.hold.duration     histogram, s   from the acquisition to its release or loss
//	redisync.lock.acquisitions      counter        re-entries included
//	redisync.lock.handovers         counter        acquisitions handed over by the releasing holder
//	redisync.lock.losses            counter        holds that ended without Unlock (not by Close)
//	redisync.lock.abandoned         counter        held ctxs dropped without Unlock
//	redisync.lock.renewal_failures  counter        failed renewals of one hold (it may yet survive)
//	redisync.notifier.reconnects    counter        Pub/Sub reconnections with waiters waiting
//
// Every lock instrument has the attribute redisync.primitive, and redisync.lock.name only with
// WithLockNames: names are often unbounded (one lock per order, per user), and every name is a
// series of its own.
package redisyncotel

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/redisync/redisync"
)

// Attribute keys of the instruments.
const (
	PrimitiveKey = attribute.Key("redisync.primitive")
	NameKey      = attribute.Key("redisync.lock.name")
)

// Option configures Metrics.
type Option func(*Metrics)

// WithLockNames adds each lock's name as the attribute redisync.lock.name. Use it only when the
// names are few and fixed: each name is a time series of every instrument.
func WithLockNames() Option { return func(m *Metrics) { m.names = true } }

// Metrics turns a Client's events into measurements. It is safe for concurrent use; one may serve
// several Clients.
type Metrics struct {
	names bool

	wait, hold                                        metric.Float64Histogram
	acquisitions, handovers, losses, abandoned, renew metric.Int64Counter
	reconnects                                        metric.Int64Counter

	attrs sync.Map // primitive -> *attrs, when names are left out
}

// New creates the instruments on a meter of mp.
func New(mp metric.MeterProvider, opts ...Option) (*Metrics, error) {
	m := &Metrics{}
	for _, o := range opts {
		o(m)
	}
	meter := mp.Meter("github.com/redisync/redisync")
	var errs []error
	hist := func(name, desc string) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc))
		errs = append(errs, err)
		return h
	}
	count := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	m.wait = hist("redisync.lock.wait.duration", "How long an acquisition took, from the call to the acquisition.")
	m.hold = hist("redisync.lock.hold.duration", "How long an acquisition was held, until its release or loss.")
	m.acquisitions = count("redisync.lock.acquisitions", "{acquisition}", "Acquisitions, re-entries included.")
	m.handovers = count("redisync.lock.handovers", "{acquisition}", "Acquisitions handed over by the releasing holder.")
	m.losses = count("redisync.lock.losses", "{hold}", "Holds that ended without Unlock, other than by Close.")
	m.abandoned = count("redisync.lock.abandoned", "{acquisition}", "Held contexts dropped without Unlock.")
	m.renew = count("redisync.lock.renewal_failures", "{renewal}", "Renewals of a hold that failed.")
	m.reconnects = count("redisync.notifier.reconnects", "{reconnect}", "Pub/Sub reconnections while waiters waited.")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// Option returns the redisync.Option that reports a Client's events to m.
func (m *Metrics) Option() redisync.Option { return redisync.WithEvents(m.Record) }

// Record measures one event. It never blocks beyond the instruments' own work.
func (m *Metrics) Record(e redisync.Event) {
	ctx := context.Background() // events carry none: they happen on the library's goroutines
	if e.Kind == redisync.EventReconnected {
		m.reconnects.Add(ctx, int64(e.Channels))
		return
	}
	a := m.attributes(e)
	switch e.Kind {
	case redisync.EventAcquired:
		m.acquisitions.Add(ctx, 1, a.add...)
		if e.HandedOver {
			m.handovers.Add(ctx, 1, a.add...)
		}
		m.wait.Record(ctx, e.Wait.Seconds(), a.record...)
	case redisync.EventReleased:
		m.hold.Record(ctx, e.Held.Seconds(), a.record...)
	case redisync.EventLost:
		m.hold.Record(ctx, e.Held.Seconds(), a.record...)
		if !errors.Is(e.Cause, redisync.ErrClosed) {
			m.losses.Add(ctx, 1, a.add...)
		}
	case redisync.EventAbandoned:
		m.hold.Record(ctx, e.Held.Seconds(), a.record...)
		m.abandoned.Add(ctx, 1, a.add...)
	case redisync.EventRenewalFailed:
		m.renew.Add(ctx, 1, a.add...)
	}
}

// attrs are one attribute set as the instruments' options take it; built once per primitive, the
// measurements allocate nothing for them.
type attrs struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

func newAttrs(kv ...attribute.KeyValue) *attrs {
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	return &attrs{add: []metric.AddOption{o}, record: []metric.RecordOption{o}}
}

func (m *Metrics) attributes(e redisync.Event) *attrs {
	if m.names {
		return newAttrs(PrimitiveKey.String(e.Primitive), NameKey.String(e.Name))
	}
	if a, ok := m.attrs.Load(e.Primitive); ok {
		return a.(*attrs)
	}
	a, _ := m.attrs.LoadOrStore(e.Primitive, newAttrs(PrimitiveKey.String(e.Primitive)))
	return a.(*attrs)
}
