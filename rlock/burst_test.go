package rlock_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/testkit"
)

// Contention that resumes after a quiet spell goes on at once: with no Java process anywhere, no
// release counts a listener beyond the Clients listed, so none leaves the lock free for a Java
// waiter's turn (200 ms in which every acquisition waits).
//
// Each burst starts once the spell is observably over: no Client listens on the lock's channel and
// the clients record is gone, so every Client subscribes and lists itself anew, at once. Throughout
// the burst a probe reads, back to back, the marks that a release which took a Client for a Java
// waiter leaves among the waiter records: none may appear. The longest hand-over (from the start of
// a release to the next acquisition; the holder's own time is the test's) is held to a few round
// trips, the round trip being the longest that the probe's reads took: a machine that stalls (a CPU
// hog, the race detector, other tests) stretches both.
func TestBurstsAfterIdleDoNotStall(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const (
			name    = "burst"
			clients = 6
			per     = 12 // acquisitions per Client per burst
			bursts  = 8
			few     = 5 // round trips: a hand-over takes about two, a lost wake-up or a Java turn far more
		)
		// A short wait window, so that a Client's listing lapses soon after a burst (it lasts the
		// window and two and a half pubsub.Linger).
		opt := redisync.WithRecheckInterval(100 * time.Millisecond)
		rdb := tg.Redis(t)
		channel, records, listed := "redisson_lock__channel:{"+name+"}", "redisync_lock_waiters:{"+name+"}", "redisync_lock_clients:{"+name+"}"
		var sec testkit.Section
		locks := make([]func() (func() error, error), clients)
		for i := range locks {
			l := newLock(t, tg.Client(t, opt), name)
			locks[i] = func() (func() error, error) {
				held, err := l.Lock(context.Background())
				return func() error { return l.Unlock(held) }, err
			}
		}
		var worst time.Duration
		for b := range bursts {
			testkit.Eventually(t, 10*time.Second, func() error {
				if n := tg.Subscribers(t, channel); n != 0 {
					return fmt.Errorf("%d still listen on %s", n, channel)
				}
				if testkit.DoString(t, rdb, "EXISTS", listed) != "0" {
					return fmt.Errorf("%s still lists clients", listed)
				}
				return nil
			})
			var (
				mu   sync.Mutex
				acqs []acquisition
				wg   sync.WaitGroup
			)
			start := make(chan struct{})
			for _, lock := range locks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for range per {
						unlock, err := lock()
						if err != nil {
							t.Error(err)
							return
						}
						sec.Enter()
						a := acquisition{at: time.Now()}
						sec.Leave()
						a.released = time.Now()
						mu.Lock()
						acqs = append(acqs, a)
						mu.Unlock()
						if err := unlock(); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			probe := probeTurns(t, rdb, records)
			close(start)
			wg.Wait()
			rtt, marks := probe.stop()
			if t.Failed() {
				return
			}
			if marks != "" {
				t.Errorf("burst %d: a Java waiter's turn was %s with no Java process", b, marks)
			}
			at := longestHandoff(acqs)
			took := acqs[at].at.Sub(acqs[at-1].released)
			worst = max(worst, took)
			if took > few*rtt {
				t.Errorf("burst %d: a hand-over took %v (%v into the burst), over %d round trips of %v (%d reads answered meanwhile)",
					b, took, acqs[at].at.Sub(acqs[0].at), few, rtt, probe.within(acqs[at-1].released, acqs[at].at))
			}
		}
		t.Logf("longest hand-over in %d bursts: %v", bursts, worst)
		if sec.Max() != 1 {
			t.Fatalf("%d owners inside at once", sec.Max())
		}
	})
}

// A Client stays listed among a lock's clients for as long as it listens on the lock's channel, the
// linger after its last wait included: a release that counted it among the listeners but not among
// the clients listed would take it for a Java waiter, and leave the lock free for a Java turn that
// nobody takes (the bursts above stalled so, now and then). The waiter is handed the lock well after
// its Client listed itself again, and stops waiting then; its channel lingers after that.
func TestListedWhileListening(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const name = "listed-while-listening"
		rdb := tg.Redis(t)
		channel, records, listed := "redisson_lock__channel:{"+name+"}", "redisync_lock_waiters:{"+name+"}", "redisync_lock_clients:{"+name+"}"
		holder := newLock(t, tg.Client(t), name)
		held := mustLock(t, holder, context.Background())
		// The waiter tries every 10 ms, and lists its Client again at the first try half a
		// pubsub.Linger after the last listing.
		c := tg.Client(t, redisync.WithRecheckInterval(10*time.Millisecond))
		id := core.Of(c).Values.Client
		waiter := newLock(t, c, name)
		done := testkit.Background(func() (context.Context, error) {
			h, err := waiter.Lock(context.Background())
			if err == nil {
				err = waiter.Unlock(h)
			}
			return h, err
		})

		score := func(key, prefix string) float64 {
			zs, err := rdb.Do(context.Background(), rdb.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()).AsZScores()
			if err != nil {
				t.Fatal(err)
			}
			for _, z := range zs {
				if strings.HasPrefix(z.Member, prefix) {
					return z.Score
				}
			}
			return 0
		}
		var first, tried float64 // the first listing's score (ms); the score of the try after the next
		testkit.Eventually(t, 10*time.Second, func() error {
			if first = score(listed, id); first == 0 {
				return fmt.Errorf("%s does not list the waiter's Client", listed)
			}
			return nil
		})
		testkit.Eventually(t, 10*time.Second, func() error {
			if score(listed, id) == first {
				return fmt.Errorf("the waiter's Client is not listed again")
			}
			tried = score(records, id+":") // µs, the try's time and the window
			return nil
		})
		testkit.Eventually(t, 10*time.Second, func() error {
			if score(records, id+":") < tried+100_000 {
				return fmt.Errorf("the waiter made no try 100 ms after its Client was listed again")
			}
			return nil
		})
		mustUnlock(t, holder, held)
		if a := <-done; a.Err != nil {
			t.Fatal(a.Err)
		}

		// What a release would count, at once: who listens, and whether the Client is listed.
		numsub := "numsub"
		if tg.Name == "cluster" {
			numsub = "shardnumsub"
		}
		count := rdb.B().Eval().Script(`local t = redis.call('time')
local listed = tonumber(redis.call('zscore', KEYS[1], ARGV[1]) or 0) >= t[1] * 1000 + math.floor(t[2] / 1000)
return {redis.call('pubsub', ARGV[2], KEYS[2])[2], listed and 1 or 0}`).Numkeys(2).Key(listed, channel).Arg(id, numsub).Build().Pin()
		testkit.Eventually(t, 10*time.Second, func() error {
			n, err := rdb.Do(context.Background(), count).AsIntSlice()
			if err != nil {
				t.Fatal(err)
			}
			if n[0] > 0 && n[1] == 0 {
				t.Fatalf("the Client still listens on %s, and is no longer listed in %s: a release takes it for a Java waiter", channel, listed)
			}
			if n[0] > 0 {
				return fmt.Errorf("the Client still listens on %s", channel)
			}
			return nil
		})
	})
}

// acquisition is when one Lock returned, and when its holder began to release it.
type acquisition struct{ at, released time.Time }

// longestHandoff sorts acqs by when they were acquired, and returns the index of the acquisition
// that came longest after the release before it.
func longestHandoff(acqs []acquisition) (at int) {
	sort.Slice(acqs, func(i, j int) bool { return acqs[i].at.Before(acqs[j].at) })
	at = 1
	for i := 2; i < len(acqs); i++ {
		if acqs[i].at.Sub(acqs[i-1].released) > acqs[at].at.Sub(acqs[at-1].released) {
			at = i
		}
	}
	return at
}

// prober reads a lock's Java turn marks (rlock_wake.lua) one read after the other, from probeTurns
// until stop.
type prober struct {
	done, finished chan struct{}
	answered       []time.Time // when each answer came back, in order
	longest        time.Duration
	marks          []string // the marks found
}

func probeTurns(t *testing.T, rdb rueidis.Client, records string) *prober {
	p := &prober{done: make(chan struct{}), finished: make(chan struct{})}
	// '~owed': a release took a Client for a Java waiter and owes it the next release; '~java':
	// that release left the lock free for the turn.
	read := rdb.B().Zmscore().Key(records).Member("~owed", "~java").Build().Pin()
	go func() {
		defer close(p.finished)
		for {
			select {
			case <-p.done:
				return
			default:
			}
			sent := time.Now()
			scores, err := rdb.Do(context.Background(), read).ToArray()
			if err != nil {
				t.Error(err)
				return
			}
			at := time.Now()
			p.answered = append(p.answered, at)
			p.longest = max(p.longest, at.Sub(sent))
			for i, mark := range []string{"owed", "given"} {
				if !scores[i].IsNil() && !slices.Contains(p.marks, mark) {
					p.marks = append(p.marks, mark)
				}
			}
		}
	}()
	return p
}

// stop ends the reads and returns the longest round trip, and the marks found ("owed", "given",
// "owed and given" or "").
func (p *prober) stop() (time.Duration, string) {
	close(p.done)
	<-p.finished
	return p.longest, strings.Join(p.marks, " and ")
}

// within returns how many reads were both sent and answered between from and to.
func (p *prober) within(from, to time.Time) int {
	lo, _ := slices.BinarySearchFunc(p.answered, from, time.Time.Compare)
	hi, _ := slices.BinarySearchFunc(p.answered, to, time.Time.Compare)
	return max(hi-lo-1, 0)
}
