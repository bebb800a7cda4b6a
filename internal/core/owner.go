package core

import (
	"context"
	"sync/atomic"
)

// An owner is what Redisson calls a thread: the holder identity inside one client. Go has no thread id,
// so the owner travels in the context; code that passes a lock's context down shares the hold.

type ownerKey struct{}

var lastOwner atomic.Int64

// NewOwnerID returns an owner id never returned before in this process. Combined with the client's
// random UUID it is unique across machines.
func NewOwnerID() int64 { return lastOwner.Add(1) }

// OwnerID returns the owner carried by ctx.
func OwnerID(ctx context.Context) (int64, bool) {
	id, ok := ctx.Value(ownerKey{}).(int64)
	return id, ok
}

// WithOwnerID returns ctx carrying owner id.
func WithOwnerID(ctx context.Context, id int64) context.Context {
	return context.WithValue(ctx, ownerKey{}, id)
}

// EnsureOwner returns ctx's owner, or a fresh one and a ctx that carries it.
func EnsureOwner(ctx context.Context) (context.Context, int64) {
	if id, ok := OwnerID(ctx); ok {
		return ctx, id
	}
	id := NewOwnerID()
	return WithOwnerID(ctx, id), id
}
