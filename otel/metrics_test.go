package redisyncotel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	redisyncotel "github.com/redisync/redisync/otel"
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// setup returns a Client whose events go to a fresh Metrics, and the reader of its measurements.
func setup(t *testing.T, tg *testkit.Target, opts ...redisyncotel.Option) (*redisync.Client, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	m, err := redisyncotel.New(mp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tg.Client(t, m.Option(), redisync.WithWatchdogTimeout(900*time.Millisecond)), reader
}

// point is one data point as read back: a counter's sum or a histogram's count, and its attributes.
type point struct {
	value int64
	attrs attribute.Set
}

func read(t *testing.T, reader *sdkmetric.ManualReader) map[string][]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string][]point{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{p.Value, p.Attributes})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{int64(p.Count), p.Attributes})
				}
			}
		}
	}
	return out
}

// total sums a metric's points for primitive "lock".
func total(points []point) int64 {
	var n int64
	for _, p := range points {
		if v, _ := p.attrs.Value(redisyncotel.PrimitiveKey); v.AsString() == "lock" {
			n += p.value
		}
	}
	return n
}

func newLock(t *testing.T, c *redisync.Client, name string) *rlock.Lock {
	t.Helper()
	l, err := rlock.New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Acquisitions, a hand-over, releases and a loss, read back from the SDK: counters and histograms
// by primitive, without the lock's name.
func TestMetrics(t *testing.T) {
	tg := testkit.Standalone(t)
	c, reader := setup(t, tg)
	holder, waiter := newLock(t, c, "otel-lock"), newLock(t, c, "otel-lock")

	held, err := holder.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	base := tg.Calls(t, "evalsha", "eval")
	got := testkit.Background(func() (context.Context, error) { return waiter.Lock(context.Background()) })
	testkit.Eventually(t, 10*time.Second, func() error { // its record left, and its try once subscribed
		if n := tg.Calls(t, "evalsha", "eval") - base; n < 2 {
			return fmt.Errorf("the waiter made %d tries, want 2", n)
		}
		return nil
	})
	if err := holder.Unlock(held); err != nil {
		t.Fatal(err)
	}
	h := testkit.Await(t, got, "waiter")
	if err := waiter.Unlock(h); err != nil {
		t.Fatal(err)
	}

	lost := newLock(t, c, "otel-lost")
	held, err = lost.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	testkit.Do(t, tg.Redis(t), "DEL", "otel-lost")
	select {
	case <-held.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the holder was not told that its lock is gone")
	}

	want := map[string]int64{
		"redisync.lock.acquisitions":  3,
		"redisync.lock.handovers":     1,
		"redisync.lock.losses":        1,
		"redisync.lock.wait.duration": 3,
		"redisync.lock.hold.duration": 3, // two releases and the loss
	}
	var m map[string][]point
	// The loss is reported just after the holder's ctx ends, and a collection may come in between.
	testkit.Eventually(t, 10*time.Second, func() error {
		m = read(t, reader)
		for name, n := range want {
			if got := total(m[name]); got != n {
				return fmt.Errorf("%s: %d for primitive \"lock\", want %d (points %v)", name, got, n, m[name])
			}
		}
		return nil
	})
	for name, points := range m {
		for _, p := range points {
			if _, ok := p.attrs.Value(redisyncotel.NameKey); ok {
				t.Errorf("%s has the lock's name without WithLockNames: %v", name, p.attrs)
			}
		}
	}
}

// WithLockNames adds the name: one series per lock.
func TestMetricsWithLockNames(t *testing.T) {
	tg := testkit.Standalone(t)
	c, reader := setup(t, tg, redisyncotel.WithLockNames())
	for _, name := range []string{"otel-a", "otel-b"} {
		l := newLock(t, c, name)
		held, err := l.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(held); err != nil {
			t.Fatal(err)
		}
	}
	points := read(t, reader)["redisync.lock.acquisitions"]
	names := map[string]int64{}
	for _, p := range points {
		v, _ := p.attrs.Value(redisyncotel.NameKey)
		names[v.AsString()] += p.value
	}
	if len(points) != 2 || names["otel-a"] != 1 || names["otel-b"] != 1 {
		t.Fatalf("acquisitions by name %v, want one each of otel-a and otel-b", names)
	}
}

// Record is what WithEvents calls on the library's hot path: a counter and a histogram, without
// allocating for the attributes once a primitive has been seen.
func TestRecordAllocations(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	m, err := redisyncotel.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	e := redisync.Event{Kind: redisync.EventAcquired, Primitive: "lock", Name: "x", Wait: time.Millisecond}
	m.Record(e)
	if n := testing.AllocsPerRun(100, func() { m.Record(e) }); n > 0 {
		t.Fatalf("Record allocates %v times per event", n)
	}
}
