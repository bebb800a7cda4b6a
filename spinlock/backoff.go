package spinlock

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff says how long a waiter sleeps between its tries: Redisson's LockOptions.BackOff. The
// library's policies are ExponentialBackoff (the default) and ConstantBackoff; one of one's own
// implements Sleeps.
type Backoff interface {
	// Sleeps returns the policy of one acquisition: each call returns how long to sleep before the
	// next try. It is called once per acquisition whose first try fails, and the policy by one
	// goroutine at a time. A sleep of 0 or less counts as a millisecond.
	Sleeps() func() time.Duration
}

// ExponentialBackoff is Redisson's LockOptions.ExponentialBackOff: the first sleep is Initial, and
// each next one Multiplier times the last plus a random jitter under n ms after the nth sleep,
// never more than Max. A zero field takes Redisson's default: Initial 1 ms, Max 128 ms,
// Multiplier 2. New refuses, with redisync.ErrInvalidArgument, a negative field and an Initial
// above Max.
type ExponentialBackoff struct {
	Initial, Max time.Duration
	Multiplier   int
}

// ConstantBackoff is Redisson's LockOptions.ConstantBackOff: every sleep is Delay (64 ms when zero,
// Redisson's default). New refuses a negative Delay with redisync.ErrInvalidArgument.
type ConstantBackoff struct {
	Delay time.Duration
}

// Redisson's defaults (LockOptions).
const (
	defaultInitial    = time.Millisecond
	defaultMax        = 128 * time.Millisecond
	defaultMultiplier = 2
	defaultDelay      = 64 * time.Millisecond
)

// resolved returns b with Redisson's defaults for its zero fields.
func (b ExponentialBackoff) resolved() ExponentialBackoff {
	if b.Initial == 0 {
		b.Initial = defaultInitial
	}
	if b.Max == 0 {
		b.Max = defaultMax
	}
	if b.Multiplier == 0 {
		b.Multiplier = defaultMultiplier
	}
	return b
}

func (b ExponentialBackoff) check() error {
	r := b.resolved()
	switch {
	case b.Initial < 0 || b.Max < 0 || b.Multiplier < 0:
		return fmt.Errorf("negative exponential back-off %+v", b)
	case r.Initial > r.Max:
		return fmt.Errorf("exponential back-off's initial sleep %v above its max %v", r.Initial, r.Max)
	}
	return nil
}

// Sleeps returns the sleeps of one acquisition: Initial, then each the last times Multiplier plus
// a random jitter in [0, n) ms for the nth sleep, up to Max (LockOptions.ExponentialBackOffPolicy).
func (b ExponentialBackoff) Sleeps() func() time.Duration {
	r := b.resolved()
	p := &exponential{next: max(r.Initial, time.Nanosecond), max: max(r.Max, r.Initial, time.Nanosecond), mult: max(r.Multiplier, 1)}
	return p.sleep
}

type exponential struct {
	next, max time.Duration
	mult      int
	fails     int
}

func (p *exponential) sleep() time.Duration {
	if p.next == p.max {
		return p.max
	}
	out := p.next
	p.fails++
	jitter := time.Duration(rand.N(p.fails)) * time.Millisecond
	m := time.Duration(p.mult)
	switch { // min(max, next*mult + jitter), without overflowing
	case p.next > p.max/m, p.next*m > p.max-jitter:
		p.next = p.max
	default:
		p.next = p.next*m + jitter
	}
	return out
}

func (b ConstantBackoff) check() error {
	if b.Delay < 0 {
		return fmt.Errorf("negative constant back-off %v", b.Delay)
	}
	return nil
}

// Sleeps returns the sleeps of one acquisition: Delay, each time.
func (b ConstantBackoff) Sleeps() func() time.Duration {
	d := b.Delay
	if d == 0 {
		d = defaultDelay
	}
	return func() time.Duration { return d }
}

// policy returns the engine's factory of per-acquisition policies for b, or why b is refused.
func policy(b Backoff) (func() func() time.Duration, error) {
	switch b := b.(type) {
	case nil:
		return nil, fmt.Errorf("nil back-off")
	case interface {
		Backoff
		check() error
	}: // the library's own: their sleeps are positive
		if err := b.check(); err != nil {
			return nil, err
		}
		return b.Sleeps, nil
	}
	return func() func() time.Duration {
		next := b.Sleeps()
		return func() time.Duration {
			if d := next(); d > 0 {
				return d
			}
			return time.Millisecond
		}
	}, nil
}
