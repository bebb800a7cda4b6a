package reliability

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// The fault matrix of docs/reliability.md: one test per row, each asserting the expected outcome.
// Servers here are private (testkit.Own), since they are stalled, blocked or killed.

// ttl is the watchdog timeout of these tests: renewals every ~333ms, a lost lease seen within ~1s.
const ttl = time.Second

func newLock(t *testing.T, c *redisync.Client, name string, opts ...rlock.Option) *rlock.Lock {
	t.Helper()
	l, err := rlock.New(c, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustLock(t *testing.T, l *rlock.Lock) context.Context {
	t.Helper()
	held, err := l.TryLock(context.Background(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// fencedWrite is the store that a fencing token protects: it accepts a write only with a token at
// least as large as every token it has seen.
var fencedWrite = rueidis.NewLuaScript(`
local seen = tonumber(redis.call('get', KEYS[1]) or '0')
if tonumber(ARGV[1]) < seen then return 0 end
redis.call('set', KEYS[1], ARGV[1])
redis.call('set', KEYS[2], ARGV[2])
return 1`)

func fenced(ctx context.Context, rdb rueidis.Client, token int64, value string) (bool, error) {
	return fencedWrite.Exec(ctx, rdb, []string{"{store}:fence", "{store}:value"}, []string{strconv.FormatInt(token, 10), value}).AsBool()
}

// Row: the server stalls for less than the TTL. The lock is kept, the watchdog recovers, a waiter
// proceeds after the release.
func TestFaultStallShorterThanTTL(t *testing.T) {
	tg := testkit.Own(t)
	c := tg.Client(t, redisync.WithWatchdogTimeout(3*ttl))
	l := newLock(t, c, "stall-short")
	held := mustLock(t, l)
	waiter := make(chan error, 1)
	var wheld context.Context
	wl := newLock(t, tg.Client(t), "stall-short")
	go func() {
		var err error
		wheld, err = wl.TryLock(context.Background(), 20*time.Second)
		waiter <- err
	}()
	if err := tg.Servers[0].Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond) // the stall: long enough for a renewal to be stuck, shorter than the TTL
	if err := tg.Servers[0].Resume(); err != nil {
		t.Fatal(err)
	}
	testkit.AwaitRenewals(t, tg.Redis(t), "stall-short", 2) // renewals after the stall
	if cause := context.Cause(held); cause != nil {
		t.Fatalf("hold lost by a stall shorter than the TTL: %v", cause)
	}
	if ok, err := l.IsHeld(held); err != nil || !ok {
		t.Fatalf("IsHeld after the stall = %v, %v", ok, err)
	}
	select {
	case err := <-waiter:
		t.Fatalf("waiter acquired while held: %v", err)
	default:
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	if err := <-waiter; err != nil {
		t.Fatalf("waiter after the stall: %v", err)
	}
	if err := wl.Unlock(wheld); err != nil {
		t.Fatal(err)
	}
}

// Row: the server stalls for longer than the TTL. The holder's ctx ends with ErrLost (before the
// server lets anyone else in), a waiter acquires, and the old holder's fenced write is rejected.
func TestFaultStallLongerThanTTL(t *testing.T) {
	tg := testkit.Own(t)
	c1, c2 := tg.Client(t, redisync.WithWatchdogTimeout(ttl)), tg.Client(t, redisync.WithWatchdogTimeout(ttl))
	rdb := tg.Redis(t)
	l1 := newLock(t, c1, "stall-long", rlock.WithFencing())
	l2 := newLock(t, c2, "stall-long", rlock.WithFencing())
	held1 := mustLock(t, l1)
	token1, _ := l1.Token(held1)
	if ok, err := fenced(context.Background(), rdb, token1, "first"); err != nil || !ok {
		t.Fatalf("first holder's write: %v, %v", ok, err)
	}
	type result struct {
		held context.Context
		err  error
		at   time.Time
	}
	waiter := make(chan result, 1)
	go func() {
		h, err := l2.TryLock(context.Background(), 20*time.Second)
		waiter <- result{h, err, time.Now()}
	}()
	// When the holder's ctx ended, as seen from inside the holder's process.
	lostAt := make(chan time.Time, 1)
	context.AfterFunc(held1, func() { lostAt <- time.Now() })
	subscribers(t, tg, "redisson_lock__channel:{stall-long}", 1) // the waiter waits
	if err := tg.Servers[0].Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * ttl) // the stall: the last renewal's lease ends within it
	if err := tg.Servers[0].Resume(); err != nil {
		t.Fatal(err)
	}
	var lost time.Time
	select {
	case lost = <-lostAt:
	case <-time.After(5 * time.Second):
		t.Fatal("holder's ctx still live after a stall longer than its TTL")
	}
	if !errors.Is(context.Cause(held1), redisync.ErrLost) {
		t.Fatalf("holder's cause %v, want ErrLost", context.Cause(held1))
	}
	r := <-waiter
	if r.err != nil {
		t.Fatalf("waiter after the stall: %v", r.err)
	}
	if r.at.Before(lost) {
		t.Fatalf("waiter acquired %v before the first holder's ctx ended: two owners", lost.Sub(r.at))
	}
	token2, _ := l2.Token(r.held)
	if token2 <= token1 {
		t.Fatalf("tokens %d then %d: not increasing", token1, token2)
	}
	if ok, err := fenced(context.Background(), rdb, token2, "second"); err != nil || !ok {
		t.Fatalf("new holder's write: %v, %v", ok, err)
	}
	if ok, err := fenced(context.Background(), rdb, token1, "stale"); err != nil || ok {
		t.Fatalf("old holder's fenced write accepted (%v, %v): it must be rejected", ok, err)
	}
	if err := l1.Unlock(held1); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("old holder's unlock: %v, want ErrNotHeld", err)
	}
	if err := l2.Unlock(r.held); err != nil {
		t.Fatal(err)
	}
}

// Row: a command is blocked by DEBUG SLEEP or CLIENT PAUSE WRITE. A Lock whose ctx ends meanwhile
// returns the ctx's error, never "acquired", and leaves no lock behind once the server answers.
func TestFaultCommandBlocked(t *testing.T) {
	for _, block := range [][]string{{"DEBUG", "SLEEP", "1.5"}, {"CLIENT", "PAUSE", "1500", "WRITE"}} {
		t.Run(block[0], func(t *testing.T) {
			tg := testkit.Own(t)
			c := tg.Client(t, redisync.WithWatchdogTimeout(ttl))
			l := newLock(t, c, "blocked")
			if block[0] == "CLIENT" {
				if _, err := tg.Servers[0].Do(block...); err != nil { // the pause is on once answered
					t.Fatal(err)
				}
			} else {
				go tg.Servers[0].Do(block...)
				// The sleep is on once the server stops answering.
				testkit.Eventually(t, 10*time.Second, func() error {
					ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
					defer cancel()
					if _, err := tg.Servers[0].DoContext(ctx, "PING"); err == nil {
						return errors.New("the server still answers")
					}
					return nil
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			held, err := l.Lock(ctx)
			if err == nil {
				l.Unlock(held)
				t.Fatal("acquired while the server was blocked past the caller's deadline")
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock during %v: %v, want the ctx's deadline", block, err)
			}
			testkit.Eventually(t, 5*time.Second, func() error {
				n, err := tg.Servers[0].Do("EXISTS", "blocked")
				if err == nil && n != "0" {
					err = errors.New("a lock was left behind by the abandoned acquisition")
				}
				return err
			})
			// And the lock works once the server answers again.
			if err := l.Unlock(mustLock(t, l)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Row: the notification connection is killed while a waiter waits, and the release is published
// while it is down. The waiter re-checks when the notifier reconnects and does not wait for the
// lease (30 s here) nor the recheck interval (1 min).
func TestFaultNotificationConnectionKilled(t *testing.T) {
	tg := testkit.Own(t)
	slow := []redisync.Option{redisync.WithWatchdogTimeout(30 * time.Second), redisync.WithRecheckInterval(time.Minute)}
	l1 := newLock(t, tg.Client(t, slow...), "pubsub-killed")
	l2 := newLock(t, tg.Client(t, slow...), "pubsub-killed")
	held := mustLock(t, l1)
	waiter := make(chan error, 1)
	var held2 context.Context
	go func() {
		var err error
		held2, err = l2.Lock(context.Background())
		waiter <- err
	}()
	subscribers(t, tg, "redisson_lock__channel:{pubsub-killed}", 1)
	if _, err := tg.Servers[0].Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	if err := l1.Unlock(held); err != nil { // its message most likely goes to nobody
		t.Fatal(err)
	}
	select {
	case err := <-waiter:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("waiter acquired %v after the release", time.Since(released).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("waiter still waiting 10 s after the release: no re-check on reconnect")
	}
	if err := l2.Unlock(held2); err != nil {
		t.Fatal(err)
	}
}

// Row: the server is killed and restarted. Without persistence the lock is gone and the holder
// learns it once its Client reconnects (TestRestartWithoutPersistence measures how soon); with
// appendfsync always it survives, stays held, and the check made on the reconnect keeps it.
func TestFaultServerRestart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		survive bool
	}{
		{"no persistence", nil, false},
		{"appendfsync always", []string{"--appendonly", "yes", "--appendfsync", "always"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := testkit.Own(t, tc.args...)
			c := tg.Client(t, redisync.WithWatchdogTimeout(2*ttl))
			l := newLock(t, c, "restarted")
			held := mustLock(t, l)
			if err := tg.Servers[0].Kill(); err != nil {
				t.Fatal(err)
			}
			if err := tg.Servers[0].Restart(); err != nil {
				t.Fatal(err)
			}
			n, err := tg.Servers[0].Do("EXISTS", "restarted")
			if err != nil {
				t.Fatal(err)
			}
			if got := n == "1"; got != tc.survive {
				t.Fatalf("lock present after restart: %v, want %v", got, tc.survive)
			}
			if !tc.survive {
				select {
				case <-held.Done():
				case <-time.After(5 * time.Second):
					t.Fatal("holder not told that the restart lost its lock")
				}
				if !errors.Is(context.Cause(held), redisync.ErrLost) {
					t.Fatalf("cause %v, want ErrLost", context.Cause(held))
				}
				if err := l.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
					t.Fatalf("unlock of a lost lock: %v, want ErrNotHeld", err)
				}
				return
			}
			testkit.AwaitRenewals(t, tg.Redis(t), "restarted", 2) // renewals against the restarted server
			if cause := context.Cause(held); cause != nil {
				t.Fatalf("persisted lock reported lost: %v", cause)
			}
			if err := l.Unlock(held); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Row: the server's clock jumps forward (simulated: the lock's TTL is cut to 1 ms while held). The
// holder learns at its next renewal and its ctx ends with ErrLost; a waiter then acquires.
func TestFaultClockJump(t *testing.T) {
	tg := testkit.Own(t)
	c := tg.Client(t, redisync.WithWatchdogTimeout(ttl))
	l := newLock(t, c, "clock-jump")
	held := mustLock(t, l)
	if _, err := tg.Servers[0].Do("PEXPIRE", "clock-jump", "1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(10 * ttl):
		t.Fatal("holder not told that its lock expired early")
	}
	if !errors.Is(context.Cause(held), redisync.ErrLost) {
		t.Fatalf("cause %v, want ErrLost", context.Cause(held))
	}
	other := newLock(t, tg.Client(t), "clock-jump")
	if err := other.Unlock(mustLock(t, other)); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(held); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("unlock after the jump: %v, want ErrNotHeld", err)
	}
}

// Row: the client's clock is wrong. Nothing to break, as long as no script sets an absolute expiry
// computed from the client's clock: every expiry is relative (PX, PEXPIRE) and Redis's own.
func TestFaultClientClockUnused(t *testing.T) {
	files, err := filepath.Glob("../lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	absolute := regexp.MustCompile(`(?i)\b(pexpireat|expireat|pxat|exat)\b`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := absolute.Find(src); m != nil {
			t.Errorf("%s sets an absolute expiry (%s): a wrong client clock would break it", f, m)
		}
	}
}

// Row: the holder's process is paused past its lease (GC pause, frozen VM). Another owner acquires;
// the paused holder's ctx ends with ErrLost once it runs again, and its fenced write is rejected.
func TestFaultHolderPaused(t *testing.T) {
	tg := testkit.Own(t)
	rdb := tg.Redis(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+tg.Addrs[0])
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	out := bufio.NewScanner(stdout)
	line := func() string {
		if !out.Scan() {
			t.Fatalf("helper ended early: %v", out.Err())
		}
		return out.Text()
	}
	var token1 int64
	if _, err := fmt.Sscanf(line(), "TOKEN %d", &token1); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	l := newLock(t, tg.Client(t, redisync.WithWatchdogTimeout(ttl)), helperLock, rlock.WithFencing())
	held, err := l.TryLock(context.Background(), 10*ttl) // the helper's lease must run out first
	if err != nil {
		t.Fatal(err)
	}
	token2, _ := l.Token(held)
	if ok, err := fenced(context.Background(), rdb, token2, "new owner"); err != nil || !ok {
		t.Fatalf("new owner's write: %v, %v", ok, err)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "resume\n")
	if got := line(); got != "WRITE rejected" {
		t.Fatalf("paused holder's fenced write: %q, want rejected", got)
	}
	if got := line(); !strings.HasPrefix(got, "LOST ") || !strings.Contains(got, redisync.ErrLost.Error()) {
		t.Fatalf("paused holder after resuming: %q, want its ctx ended with ErrLost", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
}

const (
	helperEnv  = "REDISYNC_RELIABILITY_HOLDER"
	helperLock = "paused-holder"
)

// runHolder is the paused holder of TestFaultHolderPaused, run in a process of its own: it takes
// the fenced lock, reports its token, and after being resumed tries a fenced write and reports
// what became of its ctx.
func runHolder(addr string) int {
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true}, redisync.WithWatchdogTimeout(ttl))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	l, _ := rlock.New(c, helperLock, rlock.WithFencing())
	held, err := l.Lock(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	token, _ := l.Token(held)
	fmt.Printf("TOKEN %d\n", token)
	bufio.NewReader(os.Stdin).ReadString('\n') // resumed
	ok, err := fenced(context.Background(), c.Redis(), token, "paused holder")
	switch {
	case err != nil:
		fmt.Println("WRITE error", err)
	case ok:
		fmt.Println("WRITE accepted")
	default:
		fmt.Println("WRITE rejected")
	}
	select {
	case <-held.Done():
		fmt.Println("LOST", context.Cause(held))
	case <-time.After(5 * ttl):
		fmt.Println("STILL HELD")
	}
	return 0
}

// subscribers waits until channel has n subscribers on the server of tg.
func subscribers(t *testing.T, tg *testkit.Target, channel string, n int) {
	t.Helper()
	want := strconv.Itoa(n)
	testkit.Eventually(t, 10*time.Second, func() error {
		out, err := tg.Servers[0].Do("PUBSUB", "NUMSUB", channel)
		if f := strings.Fields(out); err == nil && (len(f) != 2 || f[1] != want) {
			err = fmt.Errorf("%s: %q subscribed, want %d", channel, out, n)
		}
		return err
	})
}
