package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/spinlock"
)

// The server's calls per operation, through the library (not the raw scripts of -scripts), by
// command: the uncontended rlock pair, a contended rlock (and spinlock) acquisition with 8 Clients, and a fair
// lock acquisition with 8 and 64 Clients in line. Every Client is on loopback, so waiting costs
// what the server runs, not round trips.
//
//	cd bench && go run . -calls

// lockPair is one acquisition and its release, on a lock of one Client.
type lockPair func(ctx context.Context) error

// callCase is a lock kind at a number of Clients: newPair makes one Client's lock on name.
type callCase struct {
	name    string
	clients int
	pairs   int // in all, shared out between the Clients
	newPair func(c *redisync.Client, name string) (lockPair, error)
}

// ctxLock is what a pair needs of a lock kind.
type ctxLock interface {
	Lock(ctx context.Context) (context.Context, error)
	Unlock(held context.Context) error
}

// pairOf makes l's Lock and Unlock one pair; it takes a kind's New as it returns.
func pairOf(l ctxLock, err error) (lockPair, error) {
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		held, err := l.Lock(ctx)
		if err != nil {
			return err
		}
		return l.Unlock(held)
	}, nil
}

func rlockPair(c *redisync.Client, name string) (lockPair, error) { return pairOf(rlock.New(c, name)) }
func spinPair(c *redisync.Client, name string) (lockPair, error) {
	return pairOf(spinlock.New(c, name))
}
func fairPair(c *redisync.Client, name string) (lockPair, error) {
	return pairOf(fairlock.New(c, name))
}

var callCases = []callCase{
	{"rlock, uncontended pair", 1, 2000, rlockPair},
	{"rlock, contended acquisition", 8, 2000, rlockPair},
	// The same lock and scripts with waiters that poll (Redisson's back-off) instead of recording
	// themselves: what the records, the hand-over and the Java turn's count cost, by difference.
	{"spinlock, contended acquisition", 8, 2000, spinPair},
	{"fairlock, contended acquisition", 8, 1600, fairPair},
	{"fairlock, contended acquisition", 64, 1600, fairPair},
}

// serverCalls prints, for every case, the server's calls per acquisition (INFO commandstats
// before and after, less the INFO itself), in all and by command.
func serverCalls(w io.Writer) error {
	srv, err := redistest.NewServer(redistest.Config{})
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintln(w, "server calls per acquisition, through the library (INFO commandstats), and the server's time in scripts per acquisition")
	for i, cc := range callCases {
		calls, err := runCalls(srv, cc, fmt.Sprintf("calls-%d", i))
		if err != nil {
			return fmt.Errorf("%s: %w", cc.name, err)
		}
		fmt.Fprintf(w, "%-32s %3d clients  %6.2f  %5.1f us  %s\n", cc.name, cc.clients, calls.total, calls.scriptUs, calls.by)
	}
	return nil
}

type callCount struct {
	total    float64
	scriptUs float64 // EVALSHA and EVAL, the calls inside them included
	by       string
}

func runCalls(srv *redistest.Server, cc callCase, name string) (callCount, error) {
	ctx := context.Background()
	var pairs []lockPair
	for range cc.clients {
		c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{srv.Addr}})
		if err != nil {
			return callCount{}, err
		}
		defer c.Close()
		p, err := cc.newPair(c, name)
		if err != nil {
			return callCount{}, err
		}
		if err := p(ctx); err != nil { // scripts loaded, subscriptions made
			return callCount{}, err
		}
		pairs = append(pairs, p)
	}
	before, err := commandStats(srv)
	if err != nil {
		return callCount{}, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(pairs))
	for _, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range cc.pairs / len(pairs) {
				if err := p(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return callCount{}, err
	}
	after, err := commandStats(srv)
	if err != nil {
		return callCount{}, err
	}
	n := float64(cc.pairs / len(pairs) * len(pairs))
	var out callCount
	var by []string
	for cmd, st := range after {
		d := st.calls - before[cmd].calls
		if cmd == "info" {
			d-- // the INFO that read before
		}
		if d/n >= 0.005 {
			by = append(by, fmt.Sprintf("%s %.2f", cmd, d/n))
		}
		out.total += d / n
		if cmd == "evalsha" || cmd == "eval" {
			out.scriptUs += (st.usec - before[cmd].usec) / n
		}
	}
	sort.Strings(by)
	out.by = strings.Join(by, ", ")
	return out, nil
}
