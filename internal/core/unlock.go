package core

import "context"

// Unlock is the Unlock of every owned hold: it finds ctx's owner, and releases the acquisition ctx
// carries of its hold on key through ReleaseHold with release, which runs the release in Redis for that owner (and its field,
// field(owner)) and returns how many holds the owner keeps. A ctx without an owner holds nothing. It
// releases even when ctx has been cancelled.
func (c *Client) Unlock(ctx context.Context, kind, name, key string, field func(owner int64) string,
	release func(ctx context.Context, owner int64, field string) (int64, error)) error {
	if ctx == nil {
		return Invalid(kind, name, "nil context")
	}
	owner, ok := OwnerID(ctx)
	if !ok {
		return Errorf(kind, name, ErrNotHeld)
	}
	f := field(owner)
	// ctx is usually a hold's ctx, which can end: detached at once, without asking for its Done channel.
	err := c.ReleaseHold(ctx, key, f, func() (int64, error) { return release(context.WithoutCancel(ctx), owner, f) })
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
