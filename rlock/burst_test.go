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
	"github.com/redisync/redisync/internal/testkit"
)

// Contention that resumes after a quiet spell goes on at once: with no Java process anywhere, no
// release counts a listener beyond the Clients listed, so none leaves the lock free for a Java
// waiter's turn (200 ms in which every acquisition waits).
//
// Each burst starts once the spell is observably over: no Client listens on the lock's channel and
// the clients record is gone, so every Client subscribes and lists itself anew, at once. The longest
// hand-over (from the start of a release to the next acquisition; the holder's own time is the
// test's) is held to a few round trips, the round trip being the longest that PINGs sent back to back
// took meanwhile: a machine that stalls (a CPU hog, the race detector, other tests) stretches both.
func TestBurstsAfterIdleDoNotStall(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const (
			name    = "burst"
			clients = 6
			per     = 12 // acquisitions per Client per burst
			bursts  = 8
			few     = 5 // round trips: a hand-over takes about two, a lost wake-up or a Java turn far more
		)
		// A short wait window, so that a Client's listing lapses within a second of quiet (it lasts
		// the window and pubsub.Linger).
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
			probe := pingBackToBack(t, rdb)
			close(start)
			wg.Wait()
			rtt := probe.stop()
			if t.Failed() {
				return
			}
			at := longestHandoff(acqs)
			took := acqs[at].at.Sub(acqs[at-1].released)
			worst = max(worst, took)
			if took > few*rtt {
				t.Errorf("burst %d: a hand-over took %v (%v into the burst), over %d round trips of %v (%d PINGs answered meanwhile)",
					b, took, acqs[at].at.Sub(acqs[0].at), few, rtt, probe.within(acqs[at-1].released, acqs[at].at))
			}
			// A release that counted more listeners than Clients listed leaves these marks.
			if marks := testkit.DoString(t, rdb, "ZRANGE", records, "0", "-1"); strings.Contains(marks, "~") {
				t.Errorf("burst %d: a Java waiter's turn was owed or given with no Java process: records %q", b, marks)
			}
		}
		t.Logf("longest hand-over in %d bursts: %v", bursts, worst)
		if sec.Max() != 1 {
			t.Fatalf("%d owners inside at once", sec.Max())
		}
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

// pinger sends PINGs one after the other, from pingBackToBack until stop.
type pinger struct {
	done, finished chan struct{}
	answered       []time.Time // when each answer came back, in order
	longest        time.Duration
}

func pingBackToBack(t *testing.T, rdb rueidis.Client) *pinger {
	p := &pinger{done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(p.finished)
		for {
			select {
			case <-p.done:
				return
			default:
			}
			sent := time.Now()
			if err := rdb.Do(context.Background(), rdb.B().Ping().Build()).Error(); err != nil {
				t.Error(err)
				return
			}
			at := time.Now()
			p.answered = append(p.answered, at)
			p.longest = max(p.longest, at.Sub(sent))
		}
	}()
	return p
}

// stop ends the PINGs and returns the longest round trip.
func (p *pinger) stop() time.Duration {
	close(p.done)
	<-p.finished
	return p.longest
}

// within returns how many PINGs were both sent and answered between from and to.
func (p *pinger) within(from, to time.Time) int {
	lo, _ := slices.BinarySearchFunc(p.answered, from, time.Time.Compare)
	hi, _ := slices.BinarySearchFunc(p.answered, to, time.Time.Compare)
	return max(hi-lo-1, 0)
}
