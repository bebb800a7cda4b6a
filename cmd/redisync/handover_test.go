package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// zcard is how many records the sorted set key holds.
func zcard(t *testing.T, tg *testkit.Target, key string) int64 {
	n, _ := tg.Redis(t).Do(context.Background(), tg.Redis(t).B().Zcard().Key(key).Build()).AsInt64()
	return n
}

// until waits until fn holds (a waiter has recorded itself, a client has stopped listening).
func until(t *testing.T, what string, fn func() bool) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, func() error {
		if !fn() {
			return fmt.Errorf("not yet: %s", what)
		}
		return nil
	})
}

// TestViewAfterHandOver: what inspect and list show of each primitive after a release handed it
// over to a waiter (a lock's grant mark, a fair lock's, a semaphore's grant), while the new holder
// holds, and once it released. The records a hand-over leaves behind are no waiters: inspect lists
// none, list counts none, and no duration is negative or absurd (a grant mark's score, 0 or minus a
// token, read as a time showed "record lapsed 498840h32m ago").
func TestViewAfterHandOver(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		ctx := context.Background()
		a, b := tg.Client(t), tg.Client(t)

		t.Run("lock", func(t *testing.T) {
			name := "ho-lock"
			la, lb := must(rlock.New(a, name)), must(rlock.New(b, name))
			held := must(la.Lock(ctx))
			got := testkit.Background(func() (context.Context, error) { return lb.Lock(ctx) })
			until(t, "the waiter's record", func() bool { return zcard(t, tg, "redisync_lock_waiters:{"+name+"}") == 1 })
			v := look(t, tg, name)
			if len(v.st.Waiters) != 1 || v.row == nil || v.row.Waiters == nil || *v.row.Waiters != 1 {
				t.Errorf("a waiter is waiting: %+v %+v", v.st, v.row)
			}
			check(t, la.Unlock(held))
			h := testkit.Await(t, got, "the waiter")
			v = look(t, tg, name)
			if len(v.st.Holders) != 1 || v.st.Holders[0].Owner != owner(b, h) || len(v.st.Waiters) != 0 {
				t.Errorf("after the hand-over: %+v, want %s holding and nobody waiting", v.st, owner(b, h))
			}
			v.goldens(t, "handover/lock.held")
			check(t, lb.Unlock(h))
			look(t, tg, name).goldens(t, "handover/lock.released")
		})

		t.Run("fair lock", func(t *testing.T) {
			name := "ho-fair"
			fa, fb := must(fairlock.New(a, name)), must(fairlock.New(b, name))
			held := must(fa.Lock(ctx))
			wctx := redisync.WithOwner(ctx)
			got := testkit.Background(func() (context.Context, error) { return fb.Lock(wctx) })
			until(t, "the waiter's record", func() bool {
				n, _ := tg.Redis(t).Do(ctx, tg.Redis(t).B().Hexists().Key("redisync_fair_waiters:{"+name+"}").Field(owner(b, wctx)).Build()).AsBool()
				return n
			})
			check(t, fa.Unlock(held))
			h := testkit.Await(t, got, "the waiter")
			v := look(t, tg, name)
			if v.st.Kind != "fair lock" || len(v.st.Holders) != 1 || v.st.Holders[0].Owner != owner(b, h) || len(v.st.Queue) != 0 {
				t.Errorf("after the hand-over: %+v, want the fair lock held by %s and nobody in line", v.st, owner(b, h))
			}
			v.goldens(t, "handover/fair.held")
			check(t, fb.Unlock(h))
			look(t, tg, name).goldens(t, "handover/fair.released")
		})

		t.Run("read-write lock", func(t *testing.T) {
			name := "ho-rw"
			ra := must(rwlock.New(a, name, rwlock.WithWriterPreference()))
			rb := must(rwlock.New(b, name, rwlock.WithWriterPreference()))
			held := must(ra.ReadLock().Lock(ctx))
			got := testkit.Background(func() (context.Context, error) { return rb.WriteLock().Lock(ctx) })
			until(t, "the writer's announcement", func() bool { return zcard(t, tg, "redisync_rwlock_writers:{"+name+"}") == 1 })
			check(t, ra.ReadLock().Unlock(held))
			h := testkit.Await(t, got, "the writer")
			v := look(t, tg, name)
			if v.st.Mode != "write" || len(v.st.Holders) != 1 || v.st.Holders[0].Owner != owner(b, h) || len(v.st.WaitingWriters) != 0 {
				t.Errorf("after the release: %+v, want the writer %s holding and no writer waiting", v.st, owner(b, h))
			}
			v.goldens(t, "handover/rw.held")
			check(t, rb.WriteLock().Unlock(h))
			look(t, tg, name).goldens(t, "handover/rw.released")
		})

		t.Run("semaphore", func(t *testing.T) {
			name := "ho-sem"
			sa, sb := must(semaphore.New(a, name)), must(semaphore.New(b, name))
			t.Cleanup(func() { sa.Delete(context.Background()) })
			must(sa.TrySetPermits(ctx, 1))
			check(t, sa.Acquire(ctx, 1))
			done := make(chan error, 1)
			go func() { done <- sb.Acquire(ctx, 1) }()
			until(t, "the waiter's record", func() bool { return zcard(t, tg, "redisync_semaphore_waiters:{"+name+"}") == 1 })
			check(t, sa.Release(ctx, 1))
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			until(t, "the waiter's client to stop listening", func() bool { return tg.Subscribers(t, "redisson_sc:{"+name+"}") == 0 })
			v := look(t, tg, name)
			if len(v.st.Waiters) != 0 || v.st.Available == nil || *v.st.Available != 0 {
				t.Errorf("after the hand-over: %+v, want no permit available and nobody waiting", v.st)
			}
			v.goldens(t, "handover/semaphore.held")
			check(t, sb.Release(ctx, 1))
			look(t, tg, name).goldens(t, "handover/semaphore.released")
		})

		t.Run("permit-expirable semaphore", func(t *testing.T) {
			name := "ho-exp"
			ea := must(semaphore.NewExpirable(a, name, semaphore.WithLease(time.Hour)))
			eb := must(semaphore.NewExpirable(b, name, semaphore.WithLease(time.Hour)))
			t.Cleanup(func() { ea.Delete(context.Background()) })
			must(ea.TrySetPermits(ctx, 1))
			ids := must(ea.Acquire(ctx, 1))
			type result struct {
				ids []string
				err error
			}
			done := make(chan result, 1)
			go func() { ids, err := eb.Acquire(ctx, 1); done <- result{ids, err} }()
			until(t, "the waiter to listen", func() bool { return tg.Subscribers(t, "redisson_sc:{"+name+"}") == 1 })
			check(t, ea.Release(ctx, ids...))
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			until(t, "the waiter's client to stop listening", func() bool { return tg.Subscribers(t, "redisson_sc:{"+name+"}") == 0 })
			v := look(t, tg, name)
			if len(v.st.Permits) != 1 || v.st.Permits[0].ID != r.ids[0] {
				t.Errorf("after the release: %+v, want the permit %s held", v.st, r.ids[0])
			}
			v.goldens(t, "handover/expirable.held")
			check(t, eb.Release(ctx, r.ids...))
			look(t, tg, name).goldens(t, "handover/expirable.released")
		})

		t.Run("countdown latch", func(t *testing.T) {
			name := "ho-latch"
			l := must(countdown.New(a, name))
			must(l.TrySetCount(ctx, 1))
			done := make(chan error, 1)
			go func() { done <- must(countdown.New(b, name)).Await(ctx) }()
			until(t, "the waiter to listen", func() bool { return tg.Subscribers(t, "redisson_countdownlatch__channel__{"+name+"}") == 1 })
			look(t, tg, name).goldens(t, "handover/latch.waiting")
			check(t, l.CountDown(ctx))
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			look(t, tg, name).goldens(t, "handover/latch.open")
		})

		t.Run("rate limiter", func(t *testing.T) {
			name := "ho-rate"
			l := must(ratelimit.New(a, name))
			t.Cleanup(func() { l.Delete(context.Background()) })
			must(l.TrySetRate(ctx, ratelimit.Config{Rate: 2, Interval: time.Hour}))
			check(t, l.Acquire(ctx, 1))
			look(t, tg, name).goldens(t, "handover/rate")
		})

		t.Run("group lock", func(t *testing.T) {
			name := "ho-group"
			ga := must(multilock.NewGroup(a, name, []string{"x", "y"}))
			gb := must(multilock.NewGroup(b, name, []string{"y", "z"}))
			held := must(ga.Lock(ctx))
			got := testkit.Background(func() (context.Context, error) { return gb.Lock(ctx) })
			until(t, "the waiter to listen", func() bool { return tg.Subscribers(t, "redisson_lock__channel:{"+name+"}") == 1 })
			look(t, tg, name).goldens(t, "handover/group.waiting")
			check(t, ga.Unlock(held))
			h := testkit.Await(t, got, "the waiter")
			until(t, "the waiter's client to stop listening", func() bool { return tg.Subscribers(t, "redisson_lock__channel:{"+name+"}") == 0 })
			v := look(t, tg, name)
			if v.st.Kind != "group lock" || len(v.st.Holders) != 1 || v.st.Holders[0].Owner != owner(b, h) {
				t.Errorf("after the release: %+v, want the group held by %s", v.st, owner(b, h))
			}
			v.goldens(t, "handover/group.held")
			check(t, gb.Unlock(h))
			look(t, tg, name).goldens(t, "handover/group.released")
		})
	})
}

// TestViewAfterToolHandOver is the hand-over between two runs of the tool: 'redisync lock wl --
// COMMAND' holding, a second one waiting, the first one's COMMAND ending. The second one holds,
// and nobody waits.
func TestViewAfterToolHandOver(t *testing.T) {
	tg := testkit.Standalone(t)
	dir := t.TempDir()
	hold := func(done string) *proc {
		return tool(t, tg.Addrs[0], "lock", "ho-tool", "--", "sh", "-c", "until [ -e "+done+" ]; do sleep 0.01; done").start()
	}
	first := hold(filepath.Join(dir, "first"))
	until(t, "the first run to hold", func() bool {
		return testkit.DoString(t, tg.Redis(t), "EXISTS", "ho-tool") == "1"
	})
	second := hold(filepath.Join(dir, "second"))
	until(t, "the second run's record", func() bool { return zcard(t, tg, "redisync_lock_waiters:{ho-tool}") == 1 })
	os.WriteFile(filepath.Join(dir, "first"), nil, 0o644)
	if code := first.wait(time.Minute); code != 0 {
		t.Fatalf("%v", first)
	}
	until(t, "the second run to hold, and say so", func() bool {
		return strings.Contains(testkit.DoString(t, tg.Redis(t), "HVALS", "redisync_holder:{ho-tool}"), fmt.Sprintf(`"pid":%d`, second.cmd.Process.Pid))
	})
	v := look(t, tg, "ho-tool")
	if len(v.st.Holders) != 1 || v.st.Holders[0].Who == nil || v.st.Holders[0].Who.PID != second.cmd.Process.Pid || len(v.st.Waiters) != 0 {
		t.Errorf("%+v, want the second run holding and nobody waiting", v.st)
	}
	v.goldens(t, "handover/tool.held")
	os.WriteFile(filepath.Join(dir, "second"), nil, 0o644)
	if code := second.wait(time.Minute); code != 0 {
		t.Fatalf("%v", second)
	}
	look(t, tg, "ho-tool").goldens(t, "handover/tool.released")
}

// TestViewOfRecords: records of every kind, written by hand as the scripts write them (see
// records.go), are read as what they are: of a lock's, only the live record of a waiter that does
// not hold is a waiter; of a semaphore's, only the live records; a fair lock handed over to its
// holder is a fair lock though nobody is in line.
func TestViewOfRecords(t *testing.T) {
	tg := testkit.Standalone(t)
	rdb := tg.Redis(t)
	now := serverMicros(rdb.Do(context.Background(), rdb.B().Time().Build()))
	at := func(d time.Duration) string { return strconv.FormatInt(now+d.Microseconds(), 10) }
	const (
		holder = "11111111-1111-1111-1111-111111111111:1"
		gone   = "22222222-2222-2222-2222-222222222222:5"
		late   = "33333333-3333-3333-3333-333333333333:9"
		waits  = "44444444-4444-4444-4444-444444444444:2"
	)
	for _, cmd := range [][]string{
		{"HSET", "rec-lock", holder, "1"},
		{"PEXPIRE", "rec-lock", "30000"},
		{"ZADD", "redisync_lock_waiters:{rec-lock}",
			"-3", holder + ":7:30000:1", // the mark of the hand-over to the holder (token 3)
			"0", gone + ":3:30000:0", // the mark of a hand-over to an owner that has released since
			at(-time.Second), late + ":1:30000:0", // a waiter that has gone
			at(5 * time.Second), "~java", // the turn kept for Java waiters
			at(time.Minute), "~owed",
			at(9 * time.Second), holder + ":8:30000:0", // the holder's own record
			at(8 * time.Second), waits + ":1:30000:0"}, // a waiter
		{"SET", "rec-sem", "0"},
		{"ZADD", "redisync_semaphore_waiters:{rec-sem}",
			at(-time.Second), "33333333-3333-3333-3333-333333333333:1:2",
			at(8 * time.Second), "44444444-4444-4444-4444-444444444444:3:1"},
		{"HSET", "redisync_semaphore_grants:{rec-sem}", "22222222-2222-2222-2222-222222222222:4:1", at(-time.Second)},
		{"HSET", "rec-fair", holder, "1"},
		{"PEXPIRE", "rec-fair", "30000"},
		{"HSET", "redisync_fair_waiters:{rec-fair}", holder, "-4 t1", gone, at(-time.Second) + " t2 30000 0"},
	} {
		testkit.Do(t, rdb, cmd...)
	}
	t.Cleanup(func() {
		testkit.Do(t, rdb, "DEL", "rec-lock", "redisync_lock_waiters:{rec-lock}", "rec-sem", "redisync_semaphore_waiters:{rec-sem}",
			"redisync_semaphore_grants:{rec-sem}", "rec-fair", "redisync_fair_waiters:{rec-fair}")
	})

	v := look(t, tg, "rec-lock")
	if len(v.st.Waiters) != 1 || v.st.Waiters[0].Owner != waits || !within(v.st.Waiters[0].Deadline, 7*time.Second, 8*time.Second) {
		t.Errorf("lock: waiters %+v, want %s alone, within 8s", v.st.Waiters, waits)
	}
	v.goldens(t, "records/lock")
	v = look(t, tg, "rec-sem")
	if v.st.Kind != "semaphore" || len(v.st.Waiters) != 1 || v.st.Waiters[0].Owner != "44444444-4444-4444-4444-444444444444:3" || v.st.Waiters[0].Permits != 1 {
		t.Errorf("semaphore: %+v, want one waiter for 1 permit", v.st)
	}
	v.goldens(t, "records/semaphore")
	v = look(t, tg, "rec-fair")
	if v.st.Kind != "fair lock" || len(v.st.Queue) != 0 {
		t.Errorf("fair lock: %+v, want a fair lock with nobody in line", v.st)
	}
	v.goldens(t, "records/fair")
}

// TestViewOfBigGroup: a group lock of more values than inspect reads shows those it read and says
// about how many it did not; list counts its holders.
func TestViewOfBigGroup(t *testing.T) {
	tg := testkit.Standalone(t)
	values := make([]string, 500)
	for i := range values {
		values[i] = "v" + strconv.Itoa(i)
	}
	c := tg.Client(t)
	g := must(multilock.NewGroup(c, "big-group", values))
	held := must(g.Lock(context.Background()))
	defer g.Unlock(held)
	st, text := inspectJSON(t, tg, "big-group")
	if st.Kind != "group lock" || len(st.Holders) != 1 || st.Holders[0].Owner != owner(c, held) {
		t.Fatalf("%+v", st)
	}
	read, more := len(st.Holders[0].Values), st.Omitted["values"]
	if read == 0 || int64(read)+more < 499 || int64(read)+more > 501 {
		t.Errorf("%d values read, about %d not: want 500 in all", read, more)
	}
	if more > 0 && !strings.Contains(text, "more values, held or not (not read)") {
		t.Errorf("text:\n%s", text)
	}
	row := listJSON(t, tg.Addrs[0], "big-group")["big-group"]
	if row.Kind != "group lock" || row.Holders == nil || *row.Holders != 1 || !strings.HasSuffix(row.Detail, "values held") {
		t.Errorf("list: %+v", row)
	}
	t.Logf("%d values read, about %d not; list: %s", read, more, row.Detail)
}
