// Package hashlock is what the locks kept as a Redisson lock hash share (rlock, fairlock, each side
// of rwlock): the checks of New, Lock, TryLock, Unlock, ForceUnlock and the queries, on top of the
// hold engine in package core. Each lock package supplies only its scripts, keys and replies, through
// Protocol and Acquisition.
package hashlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/lua"
)

// Options are the options every hash lock has.
type Options struct {
	Lease        time.Duration // 0: the Client's watchdog keeps the lock
	NonReentrant bool
	Fenced       bool
}

// Lock is one hash lock's front end.
type Lock struct {
	C      *core.Client
	Kind   string // for errors: "lock", "fair lock", "read lock", ...
	Name   string // as the Client's name mapper maps it (core.Client.Name); also the hash's key
	Lease  time.Duration
	Fenced bool
	Shared bool // read holds: see core.HoldSpec
	P      Protocol

	LeaseMs    string // what the scripts are given as the lease: Lease, or the watchdog timeout
	ReentryArg string // "1" when re-entry is allowed
	FenceArg   string // "1" when fenced
}

// Protocol is what a lock package does in Redis.
type Protocol interface {
	// Field returns owner's field in the hash.
	Field(owner int64) string
	// Begin starts one acquisition by owner, which waits at most wait (< 0: no bound). It returns
	// the ctx the hold derives from (ctx, usually).
	Begin(ctx context.Context, owner int64, field string, wait time.Duration) (context.Context, Acquisition)
	// Release releases one hold of owner: the holds the owner keeps, or an error wrapping
	// core.ErrNotHeld.
	Release(ctx context.Context, owner int64, field string, held int) (remaining int64, err error)
	// ForceRelease frees the lock whoever holds it, and reports whether it was held.
	ForceRelease(ctx context.Context) (held bool, err error)
}

// Acquisition is one acquisition under way.
type Acquisition interface {
	Wait() core.Wait
	Renew() core.RenewSpec
	// Token is the fencing token the acquisition took (when fenced).
	Token() int64
	// End runs once the acquisition is over: held is the hold's ctx, or nil with err. It returns the
	// ctx to hand out.
	End(ctx, held context.Context, err error) context.Context
}

// New checks what every hash lock requires and fills in l's common fields.
func New(c *core.Client, kind, name string, o Options, p Protocol) (Lock, error) {
	name, err := c.Name(kind, name)
	if err != nil {
		return Lock{}, err
	}
	if o.Lease < 0 {
		return Lock{}, core.Invalid(kind, name, "negative lease %v", o.Lease)
	}
	if o.Lease > 0 && o.Lease < time.Millisecond {
		return Lock{}, core.Invalid(kind, name, "lease %v is below Redis's millisecond resolution", o.Lease)
	}
	return Lock{
		C: c, Kind: kind, Name: name, Lease: o.Lease, Fenced: o.Fenced, P: p,
		LeaseMs:    c.LeaseMs(o.Lease),
		ReentryArg: Flag(!o.NonReentrant),
		FenceArg:   Flag(o.Fenced),
	}, nil
}

// Flag is a boolean as scripts take it.
func Flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Lock waits without bound: see Acquire.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) { return l.Acquire(ctx, -1) }

// TryLock refuses a negative wait, then acquires.
func (l *Lock) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	if wait < 0 {
		return nil, core.Invalid(l.Kind, l.Name, "negative wait %v", wait)
	}
	return l.Acquire(ctx, wait)
}

// Acquire acquires with ctx's owner (a fresh one when it has none), waiting at most wait (< 0: no
// bound), and returns the hold's ctx.
func (l *Lock) Acquire(ctx context.Context, wait time.Duration) (context.Context, error) {
	if ctx == nil {
		return nil, core.Invalid(l.Kind, l.Name, "nil context")
	}
	ctx, owner := core.EnsureOwner(ctx)
	field := l.P.Field(owner)
	parent, a := l.P.Begin(ctx, owner, field, wait)
	spec := core.HoldSpec{
		Kind: l.Kind, Name: l.Name, Key: l.Name, Field: field, Owner: owner, Lease: l.Lease, Shared: l.Shared,
		Renew: a.Renew(),
	}
	held, err := l.C.AcquireHold(parent, spec, wait, a.Wait())
	held = a.End(ctx, held, err)
	if err != nil {
		return nil, core.Errorf(l.Kind, l.Name, err)
	}
	if l.Fenced {
		held = l.C.WithToken(held, l.Kind, l.Name, a.Token())
	}
	return held, nil
}

// Unlock releases the hold that ctx carries.
func (l *Lock) Unlock(ctx context.Context) error {
	return l.C.Unlock(ctx, l.Kind, l.Name, l.Name, l.P)
}

// ForceUnlock frees the lock whoever holds it; when it was held, this Client's holders lose it at once.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, core.Invalid(l.Kind, l.Name, "nil context")
	}
	held, err := l.P.ForceRelease(ctx)
	if err != nil {
		return false, core.Errorf(l.Kind, l.Name, err)
	}
	if held { // every hold on the name went with the hash
		l.C.LoseHolds(l.Name, fmt.Errorf("%w: forced unlock", core.ErrLost))
	}
	return held, nil
}

// Exists reports whether the hash exists: whether anyone holds the lock.
func (l *Lock) Exists(ctx context.Context) (bool, error) {
	return l.C.Exists(ctx, l.Kind, l.Name, l.Name)
}

// IsHeld reports whether ctx's owner holds the lock.
func (l *Lock) IsHeld(ctx context.Context) (bool, error) {
	n, err := l.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many times ctx's owner holds the lock.
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	owner, ok := core.OwnerID(ctx)
	if !ok {
		return 0, nil
	}
	return l.C.HoldCount(ctx, l.Kind, l.Name, l.Name, l.P.Field(owner))
}

// TTL returns the hash's TTL: 0 when free, -1 without expiry.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	return l.C.TTL(ctx, l.Kind, l.Name, l.Name)
}

// Token returns the fencing token of the acquisition ctx came from.
func (l *Lock) Token(ctx context.Context) (int64, bool) { return l.C.Token(ctx, l.Kind, l.Name) }

// Do runs fn while holding the lock.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return core.Locked(ctx, l.Lock, l.Unlock, fn)
}

// Grant is the hand-over state that a waiter with a record keeps (core.Grants' Claim): the score its
// last failed try gave its record, and the token a hand-over brought.
type Grant struct {
	Score int64
	Tok   int64
}

// Tried notes a try's reply.
func (g *Grant) Tried(t core.LockTry) {
	if t.Acquired {
		g.Tok = t.Token
	} else if t.Recorded {
		g.Score = t.Score
	}
}

// Claim takes a hand-over if it came after the last try (see core.GrantFor).
func (g *Grant) Claim(payload string) bool {
	token, ok := core.GrantFor(payload, g.Score)
	if ok {
		g.Tok = token
	}
	return ok
}

// Token returns the fencing token of the acquisition.
func (g *Grant) Token() int64 { return g.Tok }

// Release runs a release script whose last ARGV is its re-sent flag ("0") and reads its reply. The
// script writes the request's latch only when the owner keeps holds and had not the held that the
// client counts (rlock_release.lua): the latch is deleted once answered, as Redisson deletes its
// own, so that a release leaves nothing behind.
func Release(ctx context.Context, c *core.Client, s *lua.Script, keys, args []string, latch string, held int) (int64, error) {
	n, err := ReadRelease(c.RunRelease(ctx, s, keys, args, len(args)-1))
	if err == nil && n > 0 && n+1 != int64(held) {
		c.DeleteKeyLater(latch)
	}
	return n, err
}

// Held is a Releaser's held as a script takes it.
func Held(held int) string { return strconv.Itoa(held) }

// ReadRelease reads a release script's reply: the holds the owner keeps, -1 when it held nothing
// (core.ErrNotHeld), or -2 when a re-sent release found nothing held (core.ErrResentGone).
func ReadRelease(reply rueidis.RedisResult) (int64, error) {
	n, err := reply.AsInt64()
	if err != nil {
		return 0, err
	}
	switch {
	case n == -2:
		return 0, core.ErrResentGone
	case n < 0:
		return 0, core.ErrNotHeld
	}
	return n, nil
}
