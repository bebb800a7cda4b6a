package core

import (
	"context"
	"errors"
)

// ErrResentGone is a release's answer when it was sent again after a network error and found the
// owner's hold gone: the first send released it, or the hold had lapsed before. ReleaseHold decides
// by what this client knows: a hold it counts as held was released; one it knows lost, or has no
// record of, was not held (ErrNotHeld).
var ErrResentGone = errors.New("redisync: a release sent again found the hold gone")

// Releaser runs an object's release in Redis.
type Releaser interface {
	// Field returns owner's field in the object.
	Field(owner int64) string
	// Release releases one hold of owner (whose field is field) and returns how many holds the
	// owner keeps, or an error wrapping ErrNotHeld. held is how many holds this client counts for
	// the owner, when it is sure no other release of them is under way (0: unknown).
	Release(ctx context.Context, owner int64, field string, held int) (remaining int64, err error)
}

// Unlock is the Unlock of every owned hold: it finds ctx's owner, and releases the acquisition ctx
// carries of its hold on key through ReleaseHold with r. A ctx without an owner holds nothing. It
// releases even when ctx has been cancelled.
func (c *Client) Unlock(ctx context.Context, kind, name, key string, r Releaser) error {
	if ctx == nil {
		return Invalid(kind, name, "nil context")
	}
	owner, ok := OwnerID(ctx)
	if !ok {
		return Errorf(kind, name, ErrNotHeld)
	}
	err := c.ReleaseHold(ctx, kind, key, owner, r)
	if err != nil {
		return Errorf(kind, name, err)
	}
	return nil
}

type tokenKey struct {
	c          *Client
	kind, name string
}

// WithToken returns ctx carrying the fencing token of the acquisition it stands for.
func (c *Client) WithToken(ctx context.Context, kind, name string, token int64) context.Context {
	return context.WithValue(ctx, tokenKey{c, kind, name}, token)
}

// Token returns the fencing token that WithToken put in ctx (or in a parent of it).
func (c *Client) Token(ctx context.Context, kind, name string) (int64, bool) {
	t, ok := ctx.Value(tokenKey{c, kind, name}).(int64)
	return t, ok
}
