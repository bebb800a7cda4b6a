package rwlock

//go:generate go run ../internal/gen/lockface

import (
	"context"
	"math"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/lua"
)

// keys are the side keys both sides take (rwlock_leases.lua).
var keys = map[string]string{
	"writers": layout.RWLock.Writers,
	"leases":  layout.RWLock.Leases,
	"channel": layout.RWLock.Channel,
}

// state reads either side (core.Lock.State): {pttl, count, mode, fields}.
var state = lua.Load("rwlock_state.lua")

// readSpec and writeSpec are the two sides in Redis: their scripts, and how their waiters wait.
var (
	readSpec = &core.Spec{
		Kind: "read lock",
		Keys: keys,
		Scripts: core.Scripts{
			Acquire: lua.Load("rwlock_read_acquire.lua"),
			Release: lua.Load("rwlock_read_release.lua"),
			Renew:   lua.Load("rwlock_read_renew.lua"),
			Force:   lua.Load("rwlock_force_release.lua"),
			Extend:  lua.Load("rwlock_read_extend.lua"),
			State:   state,
		},
		Policy: policy,
		Shared: true, // readers share, and may release in any order
	}
	writeSpec = &core.Spec{
		Kind: "write lock",
		Keys: keys,
		Scripts: core.Scripts{
			Acquire: lua.Load("rwlock_write_acquire.lua"),
			Release: lua.Load("rwlock_write_release.lua"),
			Renew:   lua.Load("rwlock_write_renew.lua"),
			Force:   lua.Load("rwlock_force_release.lua"),
			Leave:   lua.Load("rwlock_withdraw.lua"), // a writer that gives up stops keeping readers out
			Extend:  lua.Load("rwlock_write_extend.lua"),
			State:   state,
		},
		Policy:  policy,
		Suffix:  layout.RWLock.WriterSuffix,
		Refused: ErrUpgrade,
	}
)

// policy reads the channel's messages as Redisson does: '0' (a read unlock freed the lock) wakes
// one waiter, '1' (a write unlock, or a downgrade) wakes them all, since readers may enter together.
func policy(message string) int64 {
	if message == "1" {
		return math.MaxInt64
	}
	return 1
}

// Lock is one side of an RWLock: its ReadLock or its WriteLock.
type Lock struct {
	l      core.Lock
	c      *core.Client
	writer bool
}

// IsLocked reports whether anyone holds this side (Redisson's isLocked of each side): for the write
// lock, whether a writer holds it; for the read lock, whether the lock is in read mode or its writer
// also reads (downgrade under way).
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	st, err := l.l.State(ctx)
	if err != nil {
		return false, err
	}
	switch mode, fields := st[2], st[3]; {
	case l.writer:
		return mode == 2, nil
	case mode == 2:
		return fields > 2, nil // the writer's field and the mode: anything beyond is its own read hold
	default:
		return mode == 1, nil
	}
}
