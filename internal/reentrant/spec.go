// Package reentrant describes the reentrant lock in Redis: Redisson's RLock hash, its side keys, its
// scripts and how its waiters are woken. Packages rlock and spinlock are both this lock (as are
// Redisson's RLock and RSpinLock on the same name), and differ only in how their waiters wait.
// Package fairlock's lock is the same hash with a queue beside it (Redisson's RFairLock is an
// RLock): it takes this lock's renewal, extension and state, and its own keys and other scripts.
package reentrant

import (
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// Spec returns the lock's description for a primitive that its errors and events call kind ("lock",
// "spin lock"). Each primitive keeps its own: a Spec resolves its scripts once, for its kind.
func Spec(kind string) *core.Spec {
	return &core.Spec{Kind: kind, Keys: keys, Scripts: scripts, Policy: pubsub.WakeOne}
}

var keys = map[string]string{
	"counter": layout.Lock.Counter,
	"waiters": layout.Lock.Waiters,
	"clients": layout.Lock.Clients,
	"channel": layout.Lock.Channel,
	"wake":    layout.Lock.Wake,
}

// scripts are shared by every Spec: a spinning waiter sends only the first try's ("try"), which
// records no waiter, and never lists its Client.
var scripts = core.Scripts{
	Try:     lua.Load("rlock_try.lua"),
	Acquire: lua.Load("rlock_acquire.lua"),
	Release: lua.Load("rlock_release.lua"),
	Renew:   lua.Load("rlock_renew.lua"),
	Force:   lua.Load("rlock_force_release.lua"),
	Leave:   lua.Load("rlock_leave.lua"),
	Extend:  lua.Load("lock_extend.lua"),
	List:    lua.Load("list_client.lua"),
	State:   lua.Load("lock_state.lua"),
}
