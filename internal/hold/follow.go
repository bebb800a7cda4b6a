package hold

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/errs"
)

// A hold's ctx ends when the hold ends, and when the ctx it was taken with ends, but never because
// another hold was released: a lock taken through the ctx of another lock (hand over hand: take B
// under A, release A, work under B), or an outer read hold released before an inner one, keeps its
// ctx. A loss of that other hold (its lease ended, the watchdog found it gone) still ends it, with
// that loss as its cause: the work was taken on under both.
//
// A ctx taken with a ctx that carries holds therefore derives from that ctx's values alone, and a
// follower watches the ctx's end by hand: an end by release makes it watch the ctx the released hold
// was taken with instead, which every hold's ctx names (takenWithKey).

// takenWithKey asks a ctx for the ctx that its nearest hold (a lock's, or a composite's made with
// Derive) was taken with.
type takenWithKey struct{}

// carriesHolds reports whether a hold taken with ctx must follow ctx's end by hand.
func carriesHolds(ctx context.Context) bool {
	return ctx.Done() != nil && ctx.Value(takenWithKey{}) != nil
}

// follower ends a hold's ctx (end) when the ctx it follows ends, except by a release.
type follower struct {
	end    func(cause error)
	mu     sync.Mutex
	from   context.Context
	stop   func() bool
	closed bool
}

// follow starts watching from.
func (f *follower) follow(from context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.from = from
	f.stop = context.AfterFunc(from, func() { f.ended(from) })
}

func (f *follower) ended(from context.Context) {
	cause := context.Cause(from)
	if errors.Is(cause, errs.ErrReleased) {
		if up, ok := from.Value(takenWithKey{}).(context.Context); ok {
			f.follow(up)
			return
		}
	}
	f.end(cause)
}

// close stops the watching.
func (f *follower) close() {
	f.mu.Lock()
	f.closed = true
	stop := f.stop
	f.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// deadline is the followed ctx's.
func (f *follower) deadline() (time.Time, bool) {
	f.mu.Lock()
	from := f.from
	f.mu.Unlock()
	return from.Deadline()
}

// Derive returns the ctx a composite's hold (a MultiLock's, a RedLock's) taken with parent derives
// its own from, and stop, which ends the watching of parent once the hold has ended. The ctx ends
// as parent does, except by the release of a hold parent carries, and a hold taken through a ctx
// derived from it is not ended by the composite's release (see above). Its end is the caller's end,
// as a composite tells it from the hold's own.
func Derive(parent context.Context) (ctx context.Context, stop func()) {
	d := &derived{Context: parent, parent: parent}
	if !carriesHolds(parent) {
		return d, func() {}
	}
	var cancel context.CancelCauseFunc
	d.Context, cancel = context.WithCancelCause(context.WithoutCancel(parent))
	d.f = &follower{end: cancel}
	d.f.follow(parent)
	return d, d.f.close
}

type derived struct {
	context.Context
	parent context.Context
	f      *follower
}

func (d *derived) Value(key any) any {
	if _, ok := key.(takenWithKey); ok {
		return d.parent
	}
	return d.Context.Value(key)
}

func (d *derived) Deadline() (time.Time, bool) {
	if d.f != nil {
		return d.f.deadline()
	}
	return d.Context.Deadline()
}
