package ratelimit

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redisync/redisync/internal/errs"
)

// Type says who shares a limiter's rate: Redisson's RateType, stored as its ordinal.
type Type int

const (
	// Overall: one rate for every Client and Redisson instance (RateType.OVERALL).
	Overall Type = 0
	// PerClient: each Client has the whole rate to itself (RateType.PER_CLIENT); Limiters given the
	// same WithClientID share one. A Client's window stays in Redis after the Client is gone, as a
	// Redisson instance's does, unless the limiter has a KeepAlive: give it one.
	PerClient Type = 1
)

// String returns the type's name: "overall" or "per client".
func (t Type) String() string {
	switch t {
	case Overall:
		return "overall"
	case PerClient:
		return "per client"
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Config is a limiter's rate: Rate permits per Interval.
type Config struct {
	Type Type
	// Rate is how many permits the window holds, 1 to math.MaxUint32 (a grant's permits are stored as
	// a 32-bit unsigned int, and one Acquire may ask for the whole rate).
	Rate int64
	// Interval is the window's length, at least a millisecond; Redis keeps it in whole milliseconds
	// (rounded down).
	Interval time.Duration
	// KeepAlive, when not 0, is how long the limiter stays in Redis after its last acquisition (at
	// least Interval): an idle limiter then disappears, keys and all, and must be set again. With 0
	// its keys stay until Delete.
	KeepAlive time.Duration
}

func (cfg Config) check() string {
	switch {
	case cfg.Type != Overall && cfg.Type != PerClient:
		return fmt.Sprintf("unknown type %d", int(cfg.Type))
	case cfg.Rate < 1 || cfg.Rate > math.MaxUint32:
		return fmt.Sprintf("rate %d: want 1 to %d", cfg.Rate, uint32(math.MaxUint32))
	case cfg.Interval < time.Millisecond:
		return fmt.Sprintf("interval %v: want at least 1ms", cfg.Interval)
	case cfg.KeepAlive != 0 && cfg.KeepAlive.Milliseconds() < cfg.Interval.Milliseconds():
		return fmt.Sprintf("keep-alive %v: want 0 or at least the interval, %v", cfg.KeepAlive, cfg.Interval)
	}
	return ""
}

// TrySetRate sets the rate only if the limiter has none, and reports whether it did; a limiter that
// is set keeps its own rate (see Config). A name that holds something else is refused with
// redisync.ErrWrongType and left unchanged.
func (l *Limiter) TrySetRate(ctx context.Context, cfg Config) (bool, error) {
	return l.set(ctx, cfg, "try", nil)
}

// SetRate sets the rate, replacing the limiter's, and empties the window of the type it sets (for
// PerClient, this Client's): the new rate starts with all its permits. With KeepState it keeps the
// window instead (see KeepState). A change of Type empties both types' windows (this Client's). With
// KeepAlive 0 the limiter keeps any expiry it had (Redisson's rule). A name that holds something else
// is refused with redisync.ErrWrongType and left unchanged.
func (l *Limiter) SetRate(ctx context.Context, cfg Config, opts ...SetOption) error {
	_, err := l.set(ctx, cfg, "set", opts)
	return err
}

// UpdateRate is SetRate on a limiter that is set (Redisson's updateRate): it reports whether the
// limiter had a rate, and leaves one that has none (never set, deleted, or expired) unset. With
// KeepState it changes the rate without emptying the window.
func (l *Limiter) UpdateRate(ctx context.Context, cfg Config, opts ...SetOption) (bool, error) {
	return l.set(ctx, cfg, "update", opts)
}

// SetOption changes how SetRate and UpdateRate treat the window.
type SetOption func(*setting)

type setting struct{ keep bool }

// KeepState makes SetRate and UpdateRate keep the window (Redisson's keepState(true)): the grants made
// within the new Interval stay in it, older ones leave, and the permits left become Rate minus the
// permits of the grants that stay, 0 when they hold more. A rate that grows gives its new permits at
// once. One that shrinks below what the window holds gives none until grants leave it, and each grant
// that leaves then returns its permits, up to the rate (Redisson's rule: what was granted beyond the
// new rate is not charged again, so under steady demand the window can go on at the pace it had until
// the permits left reach the rate). The permits left are counted from the grants: permits Release gave
// back are not kept. A change of Type has nothing to keep and empties the windows as without it.
func KeepState() SetOption { return func(s *setting) { s.keep = true } }

// set sends the setting script: how is "try", "set" or "update".
func (l *Limiter) set(ctx context.Context, cfg Config, how string, opts []SetOption) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(kind, l.name, "nil context")
	}
	if msg := cfg.check(); msg != "" {
		return false, errs.Invalid(kind, l.name, "%s", msg)
	}
	var s setting
	for _, opt := range opts {
		if opt == nil {
			return false, errs.Invalid(kind, l.name, "nil option")
		}
		opt(&s)
	}
	keep := "0"
	if s.keep {
		keep = "1"
	}
	args := []string{
		strconv.FormatInt(cfg.Rate, 10),
		strconv.FormatInt(cfg.Interval.Milliseconds(), 10),
		strconv.Itoa(int(cfg.Type)),
		strconv.FormatInt(cfg.KeepAlive.Milliseconds(), 10),
		how,
		l.c.RequestID(),
		keep,
	}
	n, err := l.c.Send(ctx, setScript, l.keys[:], args).AsInt64()
	if err != nil {
		return false, errs.Errorf(kind, l.name, err)
	}
	l.c.DeleteLater(l.keys[5] + args[5])
	return n == 1, nil
}

// Config returns the limiter's rate; redisync.ErrNotInitialized when none is set.
func (l *Limiter) Config(ctx context.Context) (Config, error) {
	cfg, _, err := l.state(ctx)
	return cfg, err
}

// Available returns how many permits an acquisition could take now (for PerClient, this Client's);
// the whole rate when the window holds no grant. redisync.ErrNotInitialized when no rate is set. It
// changes nothing in Redis.
func (l *Limiter) Available(ctx context.Context) (int64, error) {
	_, n, err := l.state(ctx)
	return n, err
}

func (l *Limiter) state(ctx context.Context) (Config, int64, error) {
	res, err := l.read(ctx)
	switch {
	case err != nil:
		return Config{}, 0, err
	case len(res) == 0:
		return Config{}, 0, errs.Errorf(kind, l.name, fmt.Errorf("%w: no rate is set", errs.ErrNotInitialized))
	}
	cfg := Config{
		Rate:      res[0],
		Interval:  time.Duration(res[1]) * time.Millisecond,
		Type:      Type(res[2]),
		KeepAlive: time.Duration(res[3]) * time.Millisecond,
	}
	return cfg, res[4], nil
}

// read runs the state script: {} when no rate is set, else its six figures (ratelimit_state.lua).
func (l *Limiter) read(ctx context.Context) ([]int64, error) {
	if ctx == nil {
		return nil, errs.Invalid(kind, l.name, "nil context")
	}
	res, err := l.c.QueryScript(ctx, stateScript, l.keys[:5], nil).AsIntSlice()
	if err == nil && len(res) != 0 && len(res) != 6 {
		err = fmt.Errorf("unexpected reply %v", res)
	}
	if err != nil {
		return nil, errs.Errorf(kind, l.name, err)
	}
	return res, nil
}

// Delete removes the limiter: its rate, the Overall window and this Client's PerClient window
// (Redisson's delete; other clients' PerClient windows stay until they expire, if they do). It
// reports whether a rate was set. A name that holds something else is refused with
// redisync.ErrWrongType and left in place.
func (l *Limiter) Delete(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(kind, l.name, "nil context")
	}
	rid := l.c.RequestID()
	n, err := l.c.Send(ctx, deleteScript, l.keys[:], []string{rid}).AsInt64()
	if err != nil {
		return false, errs.Errorf(kind, l.name, err)
	}
	l.c.DeleteLater(l.keys[5] + rid)
	return n == 1, nil
}
