package hold

import (
	"context"
	"fmt"
	"sync/atomic"
)

// An owner is what Redisson calls a thread: the holder identity inside one client. Go has no thread id,
// so the owner travels in the context; code that passes a lock's context down shares the hold.

type ownerKey struct{}

var lastOwner atomic.Int64

// WithNewOwner returns ctx carrying an owner never carried before in this process. Combined with
// the client's random UUID it is unique across machines.
func WithNewOwner(ctx context.Context) context.Context { return &ownerCtx{ctx, lastOwner.Add(1)} }

// OwnerID returns the owner carried by ctx.
func OwnerID(ctx context.Context) (int64, bool) {
	switch oc := ctx.Value(ownerKey{}).(type) {
	case *ownerCtx:
		return oc.id, true
	case *heldCtx: // a hold's ctx with a fresh owner
		return oc.owner, true
	}
	return 0, false
}

// withOwnerID returns ctx carrying owner id.
func withOwnerID(ctx context.Context, id int64) context.Context {
	return &ownerCtx{ctx, id}
}

// ownerCtx carries an owner in one allocation, where context.WithValue with a boxed int64 takes two.
// Its Value answers with the ownerCtx itself, so that reading the owner allocates nothing.
type ownerCtx struct {
	context.Context
	id int64
}

func (c *ownerCtx) Value(key any) any {
	if _, ok := key.(ownerKey); ok {
		return c
	}
	return c.Context.Value(key)
}

func (c *ownerCtx) String() string { return fmt.Sprintf("%v.WithOwner(%d)", c.Context, c.id) }

// ensureOwner returns ctx's owner, or a fresh one and a ctx that carries it.
func ensureOwner(ctx context.Context) (context.Context, int64) {
	if id, ok := OwnerID(ctx); ok {
		return ctx, id
	}
	id := lastOwner.Add(1)
	return withOwnerID(ctx, id), id
}
