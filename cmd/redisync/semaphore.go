package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

const semaphoreHeader = `Usage: redisync semaphore [flags] --permits N NAME -- COMMAND [ARGS...]

Runs COMMAND while holding one permit of the semaphore NAME, which has N permits: at most N
processes run their COMMAND at once, on every machine that uses the same Redis. --permits sets the
number of permits when the semaphore does not exist yet; an existing one keeps its own.

The permit is one of Redisson's permit-expirable semaphore (getPermitExpirableSemaphore), so a
process that dies cannot keep it: with --lease the permit expires at the end of the lease, and
COMMAND is stopped if it still runs; without it, the permit's lease is --watchdog, renewed while
COMMAND runs, and a killed tool's permit comes back within it.

Signals, process group and exit statuses are those of 'redisync lock'.
Flags go before NAME, or anywhere before "--".
`

const semaphoreFooter = heldExitStatus + `
Examples:
  redisync semaphore --permits 3 transcode -- ffmpeg -i in.mov out.mp4
  redisync semaphore --permits 10 --wait 5m --lease 1h api-quota -- ./sync.sh
`

// cmdSemaphore runs COMMAND holding one permit of a semaphore.
func cmdSemaphore(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("semaphore", semaphoreHeader, semaphoreFooter, stdout, stderr)
	var f lockFlags
	f.register(cmd, "acquiring", "the permit expires after `DURATION` and COMMAND is stopped (default: renewed while COMMAND runs)")
	permits := cmd.fs.Int64("permits", 0, "`N` permits in all, set when the semaphore does not exist yet (required)")
	name, argv, code := f.parseHeld(cmd, args)
	if code >= 0 {
		return code
	}
	if *permits < 1 {
		return cmd.usageError("--permits must be at least 1")
	}
	start := time.Now()
	c, code := f.conn.connect(cmd, f.budget())
	if code >= 0 {
		return code
	}
	defer c.Close()
	lease, renew := *f.lease, time.Duration(0)
	if lease == 0 {
		lease, renew = *f.watchdog, *f.watchdog
	}
	e, err := semaphore.NewExpirable(c, name, semaphore.WithLease(lease))
	if err != nil {
		return cmd.usageError("%v", err)
	}
	ctx, cancel := f.before(start)
	_, err = e.TrySetPermits(ctx, *permits)
	cancel()
	if err != nil {
		return redisError(cmd, err)
	}
	p := &permitHold{e: e, lease: lease, renew: renew}
	h := holder{what: "permit", name: name, acquire: p.acquire, release: p.release,
		owner: func(context.Context) string { return p.id }}
	return runHeld(cmd, c, h, f.options(start), argv)
}

// permitHold is one permit held while COMMAND runs. Its ctx ends with redisync.ErrLost when the
// permit's lease ends (a fixed lease) or when a renewal finds it gone or cannot be sure it still is.
type permitHold struct {
	e     *semaphore.Expirable
	lease time.Duration
	renew time.Duration // > 0: renew the lease every third of it

	id     string
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}
}

func (p *permitHold) acquire(ctx context.Context, wait time.Duration) (context.Context, error) {
	start := time.Now()
	var ids []string
	var err error
	if wait < 0 {
		ids, err = p.e.Acquire(ctx, 1)
	} else {
		ids, err = p.e.TryAcquire(ctx, 1, wait)
	}
	if err != nil {
		return nil, err
	}
	p.id = ids[0]
	// The lease runs from no later than the start of the acquisition, by this machine's clock.
	held, cancel := context.WithCancelCause(context.Background())
	p.cancel = cancel
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.keep(held, start.Add(p.lease))
	return held, nil
}

// keep ends the hold when its lease may have ended: at the fixed lease's end, or, when renewing,
// when no renewal has succeeded for a whole lease or one finds the permit gone.
func (p *permitHold) keep(held context.Context, valid time.Time) {
	defer close(p.done)
	var tick <-chan time.Time
	if p.renew > 0 {
		t := time.NewTicker(p.renew / 3)
		defer t.Stop()
		tick = t.C
	}
	expiry := time.NewTimer(time.Until(valid))
	defer expiry.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-expiry.C:
			if p.renew > 0 {
				p.cancel(fmt.Errorf("%w: the permit's renewal failed until its lease may have ended", redisync.ErrLost))
			} else {
				p.cancel(fmt.Errorf("%w: lease of %v ended", redisync.ErrLost, p.lease))
			}
			return
		case <-tick:
			sent := time.Now()
			ctx, cancel := context.WithTimeout(held, p.renew/3)
			err := p.e.UpdateLease(ctx, p.id, p.renew)
			cancel()
			switch {
			case err == nil:
				expiry.Reset(time.Until(sent.Add(p.renew)))
			case errors.Is(err, redisync.ErrNotHeld):
				p.cancel(fmt.Errorf("%w: renewal found the permit gone", redisync.ErrLost))
				return
			}
			// Another error: try again at the next tick; the expiry timer decides.
		}
	}
}

func (p *permitHold) release(held context.Context) error {
	close(p.stop)
	<-p.done
	err := p.e.Release(context.WithoutCancel(held), p.id)
	p.cancel(redisync.ErrReleased)
	return err
}
