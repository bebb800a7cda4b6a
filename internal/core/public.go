package core

// unwrap returns the Client behind a *redisync.Client. Package redisync sets it in its init, as this
// package cannot import it; every package that holds a *redisync.Client has imported redisync, so
// it is set before anyone can call Of.
var unwrap func(any) *Client

// SetUnwrap is for package redisync's init only.
func SetUnwrap(f func(any) *Client) { unwrap = f }

// Of returns the Client behind c, a *redisync.Client (nil for a nil one).
func Of(c any) *Client { return unwrap(c) }
