package redisyncotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/testkit"
	redisyncotel "github.com/redisync/redisync/otel"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// instruments are the names of every instrument New creates.
var instruments = []string{
	"redisync.acquire.duration", "redisync.acquisitions", "redisync.handovers", "redisync.waits",
	"redisync.waiter.count", "redisync.lock.hold.duration", "redisync.lock.hold.count", "redisync.lock.losses",
	"redisync.lock.abandoned", "redisync.lock.renewal_failures", "redisync.latch.countdowns",
	"redisync.redis.errors", "redisync.notifier.reconnects",
}

// newMetrics returns Metrics on a fresh SDK, and the reader of its measurements.
func newMetrics(t *testing.T, opts ...redisyncotel.Option) (*redisyncotel.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	m, err := redisyncotel.New(mp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m, reader
}

// setup returns a Client whose events go to a fresh Metrics, and the reader of its measurements. Its
// watchdog renews every 2 s: a lock deleted under its holder is found gone that soon, and a round
// that a busy machine holds up (it may take 2 s) does not lose the holds the measurements count.
func setup(t *testing.T, tg *testkit.Target, opts ...redisyncotel.Option) (*redisync.Client, *sdkmetric.ManualReader) {
	t.Helper()
	m, reader := newMetrics(t, opts...)
	return tg.Client(t, m.Option(), redisync.WithWatchdogTimeout(6*time.Second)), reader
}

// point is one data point as read back: a counter's sum or a histogram's count, its attributes,
// and a histogram's sum and buckets.
type point struct {
	value  int64
	attrs  attribute.Set
	sum    float64
	bounds []float64
	counts []uint64
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
					out[m.Name] = append(out[m.Name], point{value: p.Value, attrs: p.Attributes})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{value: int64(p.Count), attrs: p.Attributes, sum: p.Sum, bounds: p.Bounds, counts: p.BucketCounts})
				}
			}
		}
	}
	return out
}

// where sums the points whose attributes include every key=value of kv ("key=value" strings).
func where(points []point, kv ...string) int64 {
	var n int64
	for _, p := range points {
		if has(p, kv...) {
			n += p.value
		}
	}
	return n
}

func has(p point, kv ...string) bool {
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		got, ok := p.attrs.Value(attribute.Key(k))
		if !ok || got.Emit() != v {
			return false
		}
	}
	return true
}

// only returns the one point of name whose attributes include kv.
func only(t *testing.T, m map[string][]point, name string, kv ...string) point {
	t.Helper()
	var found []point
	for _, p := range m[name] {
		if has(p, kv...) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s %v: %d points, want 1: %v", name, kv, len(found), m[name])
	}
	return found[0]
}

// bucketOf returns the index of the bucket that holds v.
func bucketOf(bounds []float64, v float64) int { return sort.SearchFloat64s(bounds, v) }

// holdsOne checks that a histogram point of a single measurement counts it in the bucket of its
// value, among the buckets of redisyncotel.Buckets.
func holdsOne(t *testing.T, name string, p point) {
	t.Helper()
	if !slices.Equal(p.bounds, redisyncotel.Buckets) {
		t.Fatalf("%s: bounds %v, want %v", name, p.bounds, redisyncotel.Buckets)
	}
	i := bucketOf(p.bounds, p.sum)
	if p.value != 1 || p.counts[i] != 1 {
		t.Errorf("%s: %v s counted in buckets %v, want bucket %d (up to %v s)", name, p.sum, p.counts, i, p.bounds[min(i, len(p.bounds)-1)])
	}
}

func newLock(t *testing.T, c *redisync.Client, name string) *rlock.Lock {
	t.Helper()
	l, err := rlock.New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Contended, timed-out, refused and failed acquisitions of a lock, a semaphore, a rate limiter and
// a latch, a hand-over, releases and a loss, read back from the SDK: every instrument by primitive
// and result, the waits in the buckets of their durations, the gauges back to zero.
func TestMetrics(t *testing.T) {
	tg := testkit.Standalone(t)
	c, reader := setup(t, tg)
	ctx := context.Background()
	holder, waiter := newLock(t, c, "otel-lock"), newLock(t, c, "otel-lock")

	held, err := holder.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Held, a try once refused, and a wait of 2 s timed out. (A wait whose bound passes during its
	// first try never waits, and counts as refused: 2 s leaves a busy machine time for that try.)
	if _, err := waiter.TryLock(ctx, 0); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryLock(0) = %v", err)
	}
	if _, err := waiter.TryLock(ctx, 2*time.Second); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("TryLock(2s) = %v", err)
	}
	// A waiter, waiting now; then handed the lock.
	began := time.Now()
	got := testkit.Background(func() (context.Context, error) { return waiter.Lock(ctx) })
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := where(read(t, reader)["redisync.waiter.count"], "redisync.primitive=lock"); n != 1 {
			return fmt.Errorf("%d waiters counted, want 1", n)
		}
		return nil
	})
	if n := where(read(t, reader)["redisync.lock.hold.count"], "redisync.primitive=lock"); n != 1 {
		t.Errorf("%d holds counted while one is held", n)
	}
	testkit.Eventually(t, 10*time.Second, func() error { // a wait of 50 ms at least
		if time.Since(began) < 50*time.Millisecond {
			return errors.New("not yet")
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

	// A lock on a key of another type fails with Redis's WRONGTYPE.
	testkit.Do(t, tg.Redis(t), "SET", "otel-string", "x")
	t.Cleanup(func() { testkit.Do(t, tg.Redis(t), "DEL", "otel-string") })
	if _, err := newLock(t, c, "otel-string").Lock(ctx); err == nil {
		t.Fatal("a lock on a string was acquired")
	}

	// A lost lock.
	lost := newLock(t, c, "otel-lost")
	held, err = lost.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Do(t, tg.Redis(t), "DEL", "otel-lost")
	select {
	case <-held.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the holder was not told that its lock is gone")
	}

	// A semaphore: acquired, then refused; a rate limiter: acquired, then refused; a latch counted
	// down, and awaited open.
	sem, _ := semaphore.New(c, "otel-sem")
	sem.TrySetPermits(ctx, 1)
	t.Cleanup(func() { sem.Delete(ctx) })
	if err := sem.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := sem.TryAcquire(ctx, 1, 0); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("semaphore TryAcquire(0) = %v", err)
	}
	limiter, _ := ratelimit.New(c, "otel-rate")
	limiter.TrySetRate(ctx, ratelimit.Config{Rate: 1, Interval: time.Hour})
	t.Cleanup(func() { limiter.Delete(ctx) })
	if err := limiter.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := limiter.TryAcquire(ctx, 1, 0); !errors.Is(err, redisync.ErrNotAcquired) {
		t.Fatalf("rate limiter TryAcquire(0) = %v", err)
	}
	latch, _ := countdown.New(c, "otel-latch")
	latch.TrySetCount(ctx, 1)
	if err := latch.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := latch.Await(ctx); err != nil {
		t.Fatal(err)
	}

	counts := []struct {
		name string
		kv   []string
		want int64
	}{
		{"redisync.acquisitions", []string{"redisync.primitive=lock", "redisync.acquire.result=acquired"}, 3},
		{"redisync.acquisitions", []string{"redisync.primitive=lock", "redisync.acquire.result=refused"}, 1},
		{"redisync.acquisitions", []string{"redisync.primitive=lock", "redisync.acquire.result=timed_out"}, 1},
		{"redisync.acquisitions", []string{"redisync.primitive=lock", "redisync.acquire.result=failed", "error.type=WRONGTYPE"}, 1},
		{"redisync.acquisitions", []string{"redisync.primitive=semaphore", "redisync.acquire.result=acquired"}, 1},
		{"redisync.acquisitions", []string{"redisync.primitive=semaphore", "redisync.acquire.result=refused"}, 1},
		{"redisync.acquisitions", []string{"redisync.primitive=rate limiter", "redisync.acquire.result=acquired"}, 1},
		{"redisync.acquisitions", []string{"redisync.primitive=rate limiter", "redisync.acquire.result=refused"}, 1},
		{"redisync.acquisitions", []string{"redisync.primitive=countdown latch", "redisync.acquire.result=acquired"}, 1},
		{"redisync.acquire.duration", []string{"redisync.primitive=lock"}, 6},
		{"redisync.handovers", []string{"redisync.primitive=lock"}, 1},
		{"redisync.waits", []string{"redisync.primitive=lock"}, 2},
		{"redisync.waiter.count", []string{"redisync.primitive=lock"}, 0},
		{"redisync.lock.hold.count", []string{"redisync.primitive=lock"}, 0},
		{"redisync.lock.hold.duration", []string{"redisync.primitive=lock"}, 3}, // two releases and the loss
		{"redisync.lock.losses", []string{"redisync.primitive=lock"}, 1},
		{"redisync.latch.countdowns", []string{"redisync.primitive=countdown latch"}, 1},
		{"redisync.redis.errors", []string{"redisync.primitive=lock", "error.type=WRONGTYPE"}, 1},
	}
	var m map[string][]point
	// The loss is reported just after the holder's ctx ends, and a collection may come in between.
	testkit.Eventually(t, 10*time.Second, func() error {
		m = read(t, reader)
		for _, c := range counts {
			if got := where(m[c.name], c.kv...); got != c.want {
				return fmt.Errorf("%s %v: %d, want %d (points %v)", c.name, c.kv, got, c.want, m[c.name])
			}
		}
		return nil
	})
	// Each wait in the bucket of its duration: the timed-out one of 2 s and more, the contended one
	// of 50 ms and more, the single refused try in a lower one.
	timedOut := only(t, m, "redisync.acquire.duration", "redisync.primitive=lock", "redisync.acquire.result=timed_out")
	holdsOne(t, "timed out", timedOut)
	if timedOut.sum < 2 || timedOut.sum > 10 {
		t.Errorf("the 2 s wait measured %v s", timedOut.sum)
	}
	refused := only(t, m, "redisync.acquire.duration", "redisync.primitive=lock", "redisync.acquire.result=refused")
	holdsOne(t, "refused", refused)
	if bucketOf(refused.bounds, refused.sum) >= bucketOf(refused.bounds, timedOut.sum) {
		t.Errorf("a single try (%v s) counted with the 2 s waits (%v s)", refused.sum, timedOut.sum)
	}
	acquired := only(t, m, "redisync.acquire.duration", "redisync.primitive=lock", "redisync.acquire.result=acquired")
	var high uint64
	for _, n := range acquired.counts[bucketOf(acquired.bounds, 0.05):] {
		high += n
	}
	if high < 1 || acquired.sum < 0.05 {
		t.Errorf("the contended acquisition of 50 ms and more: buckets %v (sum %v s), want one at 50 ms or more", acquired.counts, acquired.sum)
	}
	for _, p := range m["redisync.lock.hold.duration"] {
		if !slices.Equal(p.bounds, redisyncotel.Buckets) {
			t.Errorf("hold buckets %v", p.bounds)
		}
	}
	for name, points := range m {
		for _, p := range points {
			if _, ok := p.attrs.Value(redisyncotel.NameKey); ok {
				t.Errorf("%s has the lock's name without WithLockNames: %v", name, p.attrs)
			}
		}
	}
}

// TestEveryInstrument: each kind of event reaches its instruments, the rare ones included (an
// abandoned hold, a failed renewal, a reconnect), and the gauges come back to zero.
func TestEveryInstrument(t *testing.T) {
	m, reader := newMetrics(t)
	timeout := fmt.Errorf("renew: %w", context.DeadlineExceeded)
	for _, e := range []redisync.Event{
		{Kind: redisync.EventWaiting, Primitive: "fair lock", Name: "f"},
		{Kind: redisync.EventAcquired, Primitive: "fair lock", Name: "f", Wait: 3 * time.Second, Waited: true, HandedOver: true},
		{Kind: redisync.EventAcquired, Primitive: "fair lock", Name: "f", Wait: 200 * time.Microsecond},
		{Kind: redisync.EventRenewalFailed, Primitive: "fair lock", Name: "f", Cause: timeout},
		{Kind: redisync.EventAbandoned, Primitive: "fair lock", Name: "f", Held: 40 * time.Second, Ended: 1},
		{Kind: redisync.EventLost, Primitive: "fair lock", Name: "f", Held: 45 * time.Second, Ended: 1, Cause: redisync.ErrLost},
		{Kind: redisync.EventFailed, Primitive: "semaphore", Name: "s", Wait: time.Millisecond, Cause: context.Canceled},
		{Kind: redisync.EventCountedDown, Primitive: "countdown latch", Name: "l"},
		{Kind: redisync.EventReconnected, Channels: 4},
	} {
		m.Record(e)
	}
	got := read(t, reader)
	for _, name := range instruments {
		if _, ok := got[name]; !ok {
			t.Errorf("%s: no data point", name)
		}
	}
	for _, c := range []struct {
		name string
		kv   []string
		want int64
	}{
		{"redisync.waiter.count", []string{"redisync.primitive=fair lock"}, 0},
		{"redisync.lock.hold.count", []string{"redisync.primitive=fair lock"}, 0},
		{"redisync.waits", []string{"redisync.primitive=fair lock"}, 1},
		{"redisync.handovers", []string{"redisync.primitive=fair lock"}, 1},
		{"redisync.lock.renewal_failures", []string{"redisync.primitive=fair lock"}, 1},
		{"redisync.lock.abandoned", []string{"redisync.primitive=fair lock"}, 1},
		{"redisync.lock.losses", []string{"redisync.primitive=fair lock"}, 1},
		{"redisync.redis.errors", []string{"redisync.primitive=fair lock", "error.type=timeout"}, 1},
		{"redisync.redis.errors", []string{"redisync.primitive=semaphore"}, 0}, // the caller's cancel, not Redis's
		{"redisync.acquisitions", []string{"redisync.primitive=semaphore", "redisync.acquire.result=failed", "error.type=canceled"}, 1},
		{"redisync.latch.countdowns", []string{"redisync.primitive=countdown latch"}, 1},
		{"redisync.notifier.reconnects", nil, 4},
	} {
		if n := where(got[c.name], c.kv...); n != c.want {
			t.Errorf("%s %v: %d, want %d (%v)", c.name, c.kv, n, c.want, got[c.name])
		}
	}
	// 200 µs in the second bucket, 3 s in the one up to 5 s; holds of 40 and 45 s in the last
	// bounded one, up to a minute.
	fair := only(t, got, "redisync.acquire.duration", "redisync.primitive=fair lock")
	want := make([]uint64, len(redisyncotel.Buckets)+1)
	want[1], want[14] = 1, 1
	if !slices.Equal(fair.counts, want) {
		t.Errorf("acquisitions of 200 µs and 3 s in buckets %v, want %v", fair.counts, want)
	}
	hold := only(t, got, "redisync.lock.hold.duration", "redisync.primitive=fair lock")
	want = make([]uint64, len(redisyncotel.Buckets)+1)
	want[17] = 2
	if !slices.Equal(hold.counts, want) {
		t.Errorf("holds of 40 and 45 s in buckets %v, want %v", hold.counts, want)
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
	points := read(t, reader)["redisync.acquisitions"]
	names := map[string]int64{}
	for _, p := range points {
		v, _ := p.attrs.Value(redisyncotel.NameKey)
		names[v.AsString()] += p.value
	}
	if len(points) != 2 || names["otel-a"] != 1 || names["otel-b"] != 1 {
		t.Fatalf("acquisitions by name %v, want one each of otel-a and otel-b", names)
	}
}

// Record is what WithEvents calls on the library's hot path: counters and a histogram, without
// allocating for the attributes once a primitive and result have been seen.
func TestRecordAllocations(t *testing.T) {
	m, _ := newMetrics(t)
	for _, e := range []redisync.Event{
		{Kind: redisync.EventAcquired, Primitive: "lock", Name: "x", Wait: time.Millisecond},
		{Kind: redisync.EventWaiting, Primitive: "lock", Name: "x"},
		{Kind: redisync.EventNotAcquired, Primitive: "semaphore", Name: "x", Wait: time.Millisecond, Waited: true},
		{Kind: redisync.EventReleased, Primitive: "lock", Name: "x", Held: time.Millisecond, Ended: 1},
	} {
		m.Record(e)
		if n := testing.AllocsPerRun(100, func() { m.Record(e) }); n > 0 {
			t.Errorf("Record(%v) allocates %v times per event", e.Kind, n)
		}
	}
}
