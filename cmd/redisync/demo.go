package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

const demoHeader = `Usage: redisync demo [flags]

The flash-sale story. A shop has a few units in stock, and many buyers, served by several machines
(Clients), race to buy them. Each buyer reads the stock, takes a moment to pay, and writes the stock
back one lower. The demo runs the sale twice: without a lock, buyers read the same stock and the shop
sells units it does not have; with rlock, one buyer at a time reads and writes the stock, and exactly
the stock is sold. It prints what was sold, oversold and turned away, the time each sale took, and
the lock acquisitions per second (--json: as JSON).

Without --addr or --sentinel it runs on a Redis embedded in the process (miniredis): nothing to install.
$REDISYNC_ADDR is ignored here, so the demo never writes to a server by surprise. With --addr it uses
keys under "redisync:demo:<random>:" and deletes them afterwards; the records of unlocks that Redisson's
layout keeps for retried unlocks expire by themselves within 10 s.
`

const demoFooter = `
Exit status: 0 when the locked sale sold exactly the stock, 1 otherwise, 69 when Redis is unreachable.

Examples:
` + `  redisync demo
  redisync demo --buyers 1000 --stock 50 --clients 8
  redisync demo --addr 127.0.0.1:6379
`

// cmdDemo runs the flash-sale demo.
func cmdDemo(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("demo", demoHeader, demoFooter, stdout, stderr)
	buyers := cmd.fs.Int("buyers", 100, "how many buyers race for the stock")
	stock := cmd.fs.Int("stock", 10, "units in stock")
	clients := cmd.fs.Int("clients", 4, "Clients (machines) the buyers are spread over")
	pay := durationFlag(cmd.fs, "pay", 2*time.Millisecond, "how long (`DURATION`) a buyer takes to pay, between reading and writing the stock")
	asJSON := cmd.fs.Bool("json", false, "print both sales' figures as JSON (times in milliseconds)")
	var conn connFlags
	conn.registerWith(cmd.fs, "(default: a Redis embedded in this process)")
	pos, _, _, code := cmd.parse(args, 0)
	if code >= 0 {
		return code
	}
	switch {
	case len(pos) > 0:
		return cmd.usageError("unexpected argument %q", pos[0])
	case *buyers < 1:
		return cmd.usageError("--buyers must be at least 1")
	case *stock < 0:
		return cmd.usageError("--stock must not be negative")
	case *clients < 1:
		return cmd.usageError("--clients must be at least 1")
	}

	opt, where, stop, code := demoServer(cmd, &conn)
	if code >= 0 {
		return code
	}
	defer stop()
	cs := make([]*redisync.Client, 0, *clients)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for range *clients {
		c, err := redisync.New(opt, redisync.WithLogger(cmd.logger()))
		if err != nil {
			return connectError(cmd, opt, err)
		}
		cs = append(cs, c)
	}
	s := &sale{clients: cs, prefix: "redisync:demo:" + uuid.NewString()[:8] + ":", stock: *stock, buyers: *buyers, pay: *pay}
	defer s.cleanup()
	return s.show(cmd, where, *asJSON)
}

// demoServer returns the server the demo runs on, and what to call once done: the one the flags
// name, or a Redis embedded in this process. code >= 0 is an exit status.
func demoServer(cmd *command, conn *connFlags) (opt rueidis.ClientOption, where string, stop func(), code int) {
	if conn.explicit() {
		o, err := conn.option()
		if err != nil {
			return o, "", nil, cmd.usageError("%v", err)
		}
		return o, describe(o), func() {}, -1
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		fmt.Fprintf(cmd.stderr, "redisync demo: cannot start the embedded Redis: %v\n", err)
		return opt, "", nil, exitFailure
	}
	m.ClockTTL(true) // leases run down with the clock, as on a real server
	opt = rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true}
	return opt, "an embedded Redis", m.Close, -1
}

// show runs the sale without a lock and then with rlock, and tells how they went; the locked sale
// must sell exactly what there is to sell.
func (s *sale) show(cmd *command, where string, asJSON bool) int {
	stdout := cmd.stdout
	if !asJSON {
		fmt.Fprintf(stdout, "Flash sale: %d units in stock, %d buyers on %d clients, on %s.\n\n", s.stock, s.buyers, len(s.clients), where)
	}
	free, err := s.run(context.Background(), false)
	if err != nil {
		return redisError(cmd, err)
	}
	if !asJSON {
		fmt.Fprintln(stdout, free.line("without a lock"))
	}
	locked, err := s.run(context.Background(), true)
	if err != nil {
		return redisError(cmd, err)
	}
	if asJSON {
		printJSON(stdout, struct {
			Stock       int        `json:"stock"`
			Buyers      int        `json:"buyers"`
			Clients     int        `json:"clients"`
			Server      string     `json:"server"`
			WithoutLock resultJSON `json:"without_lock"`
			WithRLock   resultJSON `json:"with_rlock"`
		}{s.stock, s.buyers, len(s.clients), where, free.json(), locked.json()})
	} else {
		fmt.Fprintln(stdout, locked.line("with rlock"))
		fmt.Fprintln(stdout)
		tellSales(stdout, free, locked)
	}
	if want := int64(min(s.buyers, s.stock)); locked.sold != want {
		fmt.Fprintf(cmd.stderr, "redisync demo: the locked sale sold %d units, want %d\n", locked.sold, want)
		return exitFailure
	}
	return exitOK
}

// tellSales says what the two sales, free and locked, show.
func tellSales(stdout io.Writer, free, locked result) {
	if free.oversold() > 0 {
		fmt.Fprintf(stdout, "Without a lock, buyers read the same stock before anyone wrote it back: %d units sold that\ndo not exist.\n", free.oversold())
	} else {
		fmt.Fprintln(stdout, "Without a lock, this time the race did not oversell; run it again, or raise --buyers or --pay.")
	}
	fmt.Fprintf(stdout, "With rlock, one buyer at a time reads and writes the stock: %d sold, %d turned away.\n", locked.sold, locked.turnedAway)
}

// resultJSON is a sale's figures in demo --json.
type resultJSON struct {
	Sold         int64   `json:"sold"`
	Oversold     int64   `json:"oversold"`
	TurnedAway   int64   `json:"turned_away"`
	ElapsedMs    float64 `json:"elapsed_ms"`
	Acquisitions int64   `json:"acquisitions,omitempty"`
}

func (r result) json() resultJSON {
	return resultJSON{Sold: r.sold, Oversold: r.oversold(), TurnedAway: r.turnedAway,
		ElapsedMs: float64(r.elapsed.Microseconds()) / 1000, Acquisitions: r.acquisitions}
}

// sale is the shop: a stock key that buyers read and write back.
type sale struct {
	clients []*redisync.Client
	prefix  string
	stock   int
	buyers  int
	pay     time.Duration
}

type result struct {
	stock, sold, turnedAway int64
	elapsed                 time.Duration
	acquisitions            int64
}

func (r result) oversold() int64 { return max(r.sold-r.stock, 0) }

func (r result) line(title string) string {
	s := fmt.Sprintf("%-15s sold %4d   oversold %4d   turned away %4d   %8v", title, r.sold, r.oversold(), r.turnedAway, r.elapsed.Round(time.Millisecond))
	if r.acquisitions > 0 {
		s += fmt.Sprintf("   %.0f acquisitions/s", float64(r.acquisitions)/r.elapsed.Seconds())
	}
	return s
}

// run sells the stock to every buyer at once and reports what happened.
func (s *sale) run(ctx context.Context, locked bool) (result, error) {
	rdb := s.clients[0].Redis()
	key := s.prefix + "stock"
	if err := rdb.Do(ctx, rdb.B().Set().Key(key).Value(strconv.Itoa(s.stock)).Build()).Error(); err != nil {
		return result{}, err
	}
	locks := make([]*rlock.Lock, len(s.clients))
	for i, c := range s.clients {
		l, err := rlock.New(c, s.prefix+"lock")
		if err != nil {
			return result{}, err
		}
		locks[i] = l
	}
	r := result{stock: int64(s.stock)}
	var sold, away, acquired atomic.Int64
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	start := make(chan struct{})
	for b := range s.buyers {
		c := s.clients[b%len(s.clients)]
		l := locks[b%len(s.clients)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := func() error {
				if !locked {
					return s.buy(ctx, c.Redis(), key, &sold, &away)
				}
				held, err := l.Lock(ctx)
				if err != nil {
					return err
				}
				acquired.Add(1)
				err = s.buy(held, c.Redis(), key, &sold, &away)
				return errors.Join(err, l.Unlock(held))
			}()
			if err != nil {
				errOnce.Do(func() { firstErr = err })
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	r.elapsed = time.Since(t0)
	r.sold, r.turnedAway, r.acquisitions = sold.Load(), away.Load(), acquired.Load()
	return r, firstErr
}

// buy is one buyer: read the stock, pay, write it back one lower. Without a lock, two buyers may read
// the same stock and both sell the same unit.
func (s *sale) buy(ctx context.Context, rdb rueidis.Client, key string, sold, away *atomic.Int64) error {
	n, err := rdb.Do(ctx, rdb.B().Get().Key(key).Build()).AsInt64()
	if err != nil {
		return err
	}
	if n <= 0 {
		away.Add(1)
		return nil
	}
	time.Sleep(s.pay)
	if err := rdb.Do(ctx, rdb.B().Set().Key(key).Value(strconv.FormatInt(n-1, 10)).Build()).Error(); err != nil {
		return err
	}
	sold.Add(1)
	return nil
}

func (s *sale) cleanup() {
	rdb := s.clients[0].Redis()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, k := range []string{s.prefix + "stock", s.prefix + "lock"} {
		rdb.Do(ctx, rdb.B().Del().Key(k).Build())
	}
}
