package core

import (
	"context"
	"errors"

	"github.com/redisync/redisync/internal/errs"
)

// Locked runs fn between lock and unlock, with the hold's ctx: every primitive's Do. When the hold
// was lost while fn ran, the loss is returned with fn's error (an unlock that fails with ErrNotHeld
// only repeats it). When fn panics, or ends its goroutine (runtime.Goexit, t.FailNow), unlock runs
// before the panic goes on, so that the hold is given back and its ctx ends: the panic is not
// recovered, and keeps its stack.
func Locked(ctx context.Context, lock func(context.Context) (context.Context, error),
	unlock func(context.Context) error, fn func(context.Context) error) error {
	held, err := lock(ctx)
	if err != nil {
		return err
	}
	returned := false
	defer func() {
		if !returned {
			unlock(held)
		}
	}()
	ferr := fn(held)
	returned = true
	lost := context.Cause(held)
	uerr := unlock(held)
	if errors.Is(lost, errs.ErrLost) {
		if errors.Is(uerr, errs.ErrNotHeld) {
			uerr = nil
		}
		return errors.Join(ferr, lost, uerr)
	}
	return errors.Join(ferr, uerr)
}
