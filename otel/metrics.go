// Package redisyncotel records what a redisync Client's primitives do as OpenTelemetry metrics:
// how long acquisitions take and how they end (acquired, refused, timed out, failed), how long
// locks are held, how many holds and waiters there are now, losses, renewals, count-downs and the
// errors Redis answered, by primitive ("lock", "spin lock", "fair lock", "read lock", "write lock",
// "semaphore", "expirable semaphore", "rate limiter", "countdown latch").
//
// It is a module of its own, so that the library does not depend on OpenTelemetry:
//
//	m, err := redisyncotel.New(otel.GetMeterProvider())
//	c, err := redisync.New(opt, m.Option())
//
// The instruments (meter "github.com/redisync/redisync"), named after OpenTelemetry's semantic
// conventions; see README.md for what each answers and a Prometheus exporter:
//
//	redisync.acquire.duration         histogram, s   from the call to the acquisition or giving up
//	redisync.acquisitions             counter        acquisitions ended, by redisync.acquire.result
//	redisync.handovers                counter        acquisitions handed over by the releasing holder
//	redisync.waits                    counter        acquisitions that found the object taken and waited
//	redisync.waiter.count             updowncounter  acquisitions waiting now
//	redisync.lock.hold.duration       histogram, s   from a lock's acquisition to its release or loss
//	redisync.lock.hold.count          updowncounter  lock acquisitions held now, re-entries included
//	redisync.lock.losses              counter        holds that ended without Unlock (not by Close)
//	redisync.lock.abandoned           counter        held ctxs dropped without Unlock
//	redisync.lock.renewal_failures    counter        failed renewals of one hold (it may yet survive)
//	redisync.latch.countdowns         counter        CountDown calls
//	redisync.redis.errors             counter        errors from Redis or the connection, by error.type
//	redisync.notifier.reconnects      counter        Pub/Sub reconnections with waiters waiting
//
// The histograms' buckets run from 100 µs to a minute, the span of lock waits and holds. Every
// instrument but the last has the attribute redisync.primitive, and redisync.lock.name (the
// object's name, whatever its kind) only with WithLockNames: names are often unbounded (one lock
// per order, per user), and every name is a series of its own.
package redisyncotel

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/redisync/redisync"
)

// Attribute keys of the instruments.
const (
	PrimitiveKey = attribute.Key("redisync.primitive")
	NameKey      = attribute.Key("redisync.lock.name")
	// ResultKey is how an acquisition ended: "acquired"; "refused" (not acquired, without waiting:
	// a single try, or a rate limiter that answered that no permit frees up within the wait);
	// "timed_out" (it waited and its wait bound passed); "failed" (an error, with ErrorTypeKey).
	ResultKey = attribute.Key("redisync.acquire.result")
	// ErrorTypeKey is OpenTelemetry's error.type: Redis's error code (NOPERM, WRONGTYPE, READONLY...),
	// or "timeout", "network", "canceled", "closed", "invalid_argument", "_OTHER".
	ErrorTypeKey = attribute.Key("error.type")
)

// The results of an acquisition (ResultKey).
const (
	ResultAcquired = "acquired"
	ResultRefused  = "refused"
	ResultTimedOut = "timed_out"
	ResultFailed   = "failed"
)

// Buckets are the histograms' bucket boundaries in seconds: from 100 µs (an uncontended acquisition
// on a near server) to a minute (a long wait or hold), about three to a decade.
var Buckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Option configures Metrics.
type Option func(*options)

type options struct{ names bool }

// WithLockNames adds each object's name as the attribute redisync.lock.name. Use it only when the
// names are few and fixed: each name is a time series of every instrument.
func WithLockNames() Option { return func(o *options) { o.names = true } }

// Metrics turns a Client's events into measurements. It is safe for concurrent use; one may serve
// several Clients.
type Metrics struct {
	names bool

	acquire, hold                                   metric.Float64Histogram
	acquisitions, handovers, waits                  metric.Int64Counter
	waiters, held                                   metric.Int64UpDownCounter
	losses, abandoned, renew, countdowns, redisErrs metric.Int64Counter
	reconnects                                      metric.Int64Counter

	attrs sync.Map // attrKey -> *attrs, when names are left out
}

// New creates the instruments on a meter of mp.
func New(mp metric.MeterProvider, opts ...Option) (*Metrics, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	m := &Metrics{names: o.names}
	meter := mp.Meter("github.com/redisync/redisync")
	var errs []error
	hist := func(name, desc string) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(Buckets...))
		errs = append(errs, err)
		return h
	}
	count := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64UpDownCounter {
		c, err := meter.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	m.acquire = hist("redisync.acquire.duration", "How long an acquisition took, from the call to the acquisition or to giving up.")
	m.hold = hist("redisync.lock.hold.duration", "How long a lock acquisition was held, until its release or loss.")
	m.acquisitions = count("redisync.acquisitions", "{acquisition}", "Acquisitions ended: acquired, refused, timed out or failed.")
	m.handovers = count("redisync.handovers", "{acquisition}", "Acquisitions handed over by the releasing holder.")
	m.waits = count("redisync.waits", "{acquisition}", "Acquisitions that found the object taken and waited.")
	m.waiters = gauge("redisync.waiter.count", "{waiter}", "Acquisitions waiting now.")
	m.held = gauge("redisync.lock.hold.count", "{acquisition}", "Lock acquisitions held now, re-entries included.")
	m.losses = count("redisync.lock.losses", "{hold}", "Holds that ended without Unlock, other than by Close.")
	m.abandoned = count("redisync.lock.abandoned", "{acquisition}", "Held contexts dropped without Unlock.")
	m.renew = count("redisync.lock.renewal_failures", "{renewal}", "Renewals of a hold that failed.")
	m.countdowns = count("redisync.latch.countdowns", "{countdown}", "Count-downs of countdown latches.")
	m.redisErrs = count("redisync.redis.errors", "{error}", "Errors from Redis or the connection to it, in acquisitions and renewals.")
	m.reconnects = count("redisync.notifier.reconnects", "{reconnect}", "Pub/Sub reconnections while waiters waited.")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// Option returns the redisync.Option that reports a Client's events to m.
func (m *Metrics) Option() redisync.Option { return redisync.WithEvents(m.Record) }

// lockKinds are the primitives whose holds a Client keeps, and ends with EventReleased, EventLost
// or EventAbandoned: their acquisitions count as held until then.
var lockKinds = map[string]bool{"lock": true, "spin lock": true, "fair lock": true, "read lock": true, "write lock": true}

// Record measures one event. It never blocks beyond the instruments' own work.
func (m *Metrics) Record(e redisync.Event) {
	ctx := context.Background() // events carry none: they happen on the library's goroutines
	switch e.Kind {
	case redisync.EventReconnected:
		m.reconnects.Add(ctx, int64(e.Channels))
	case redisync.EventWaiting:
		a := m.attributes(e, "", "")
		m.waits.Add(ctx, 1, a.add...)
		m.waiters.Add(ctx, 1, a.add...)
	case redisync.EventAcquired, redisync.EventNotAcquired, redisync.EventFailed:
		m.ended(ctx, e)
	case redisync.EventReleased:
		a := m.attributes(e, "", "")
		m.hold.Record(ctx, e.Held.Seconds(), a.record...)
		m.held.Add(ctx, -int64(e.Ended), a.add...)
	case redisync.EventLost:
		a := m.attributes(e, "", "")
		m.hold.Record(ctx, e.Held.Seconds(), a.record...)
		m.held.Add(ctx, -int64(e.Ended), a.add...)
		if !errors.Is(e.Cause, redisync.ErrClosed) {
			m.losses.Add(ctx, 1, a.add...)
		}
	case redisync.EventAbandoned:
		a := m.attributes(e, "", "")
		m.hold.Record(ctx, e.Held.Seconds(), a.record...)
		m.held.Add(ctx, -int64(e.Ended), a.add...)
		m.abandoned.Add(ctx, 1, a.add...)
	case redisync.EventRenewalFailed:
		m.renew.Add(ctx, 1, m.attributes(e, "", "").add...)
		m.redisError(ctx, e)
	case redisync.EventCountedDown:
		m.countdowns.Add(ctx, 1, m.attributes(e, "", "").add...)
	}
}

// ended measures the end of an acquisition.
func (m *Metrics) ended(ctx context.Context, e redisync.Event) {
	result, errType := ResultAcquired, ""
	switch {
	case e.Kind == redisync.EventFailed:
		result, errType = ResultFailed, ErrorType(e.Cause)
		m.redisError(ctx, e)
	case e.Kind == redisync.EventNotAcquired && e.Waited:
		result = ResultTimedOut
	case e.Kind == redisync.EventNotAcquired:
		result = ResultRefused
	}
	a := m.attributes(e, result, errType)
	m.acquisitions.Add(ctx, 1, a.add...)
	m.acquire.Record(ctx, e.Wait.Seconds(), a.record...)
	p := m.attributes(e, "", "")
	if e.Waited {
		m.waiters.Add(ctx, -1, p.add...)
	}
	if e.Kind == redisync.EventAcquired {
		if e.HandedOver {
			m.handovers.Add(ctx, 1, p.add...)
		}
		if lockKinds[e.Primitive] {
			m.held.Add(ctx, 1, p.add...)
		}
	}
}

// redisError counts e's cause when Redis or the connection to it answered it.
func (m *Metrics) redisError(ctx context.Context, e redisync.Event) {
	if fromRedis(e.Cause) {
		m.redisErrs.Add(ctx, 1, m.attributes(e, "", ErrorType(e.Cause)).add...)
	}
}

// fromRedis reports whether err is Redis's answer or a failure of the connection to it, rather than
// the caller's (a cancelled ctx, a closed Client, a bad argument).
func fromRedis(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, redisync.ErrClosed) ||
		errors.Is(err, redisync.ErrInvalidArgument) {
		return false
	}
	return ErrorType(err) != "_OTHER"
}

// ErrorType classifies err for the attribute error.type, with few values: Redis's error code, or
// how the connection failed.
func ErrorType(err error) string {
	var re *rueidis.RedisError
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &re):
		code, _, _ := strings.Cut(re.Error(), " ")
		return code
	case errors.Is(err, redisync.ErrClosed):
		return "closed"
	case errors.Is(err, redisync.ErrInvalidArgument):
		return "invalid_argument"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &ne) || isConnError(err):
		return "network"
	}
	return "_OTHER"
}

// isConnError reports the connection errors rueidis returns without a net.Error.
func isConnError(err error) bool {
	return errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "EOF") ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe")
}

// attrs are one attribute set as the instruments' options take it; built once per set, the
// measurements allocate nothing for them.
type attrs struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

func newAttrs(kv ...attribute.KeyValue) *attrs {
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	return &attrs{add: []metric.AddOption{o}, record: []metric.RecordOption{o}}
}

type attrKey struct{ primitive, result, errType string }

// attributes returns e's attribute set, with the acquisition's result and error type if not "".
func (m *Metrics) attributes(e redisync.Event, result, errType string) *attrs {
	if m.names {
		return newAttrs(keyValues(e.Primitive, result, errType, NameKey.String(e.Name))...)
	}
	k := attrKey{e.Primitive, result, errType}
	if a, ok := m.attrs.Load(k); ok {
		return a.(*attrs)
	}
	a, _ := m.attrs.LoadOrStore(k, newAttrs(keyValues(e.Primitive, result, errType)...))
	return a.(*attrs)
}

func keyValues(primitive, result, errType string, more ...attribute.KeyValue) []attribute.KeyValue {
	kv := append([]attribute.KeyValue{PrimitiveKey.String(primitive)}, more...)
	if result != "" {
		kv = append(kv, ResultKey.String(result))
	}
	if errType != "" {
		kv = append(kv, ErrorTypeKey.String(errType))
	}
	return kv
}
