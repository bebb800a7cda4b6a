package rlock_test

import (
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit/locksuite"
	"github.com/redisync/redisync/rlock"
)

// Kind is package rlock's lock for the conformance suite.
var Kind = locksuite.Kind{
	Name: "rlock",
	New: func(c *redisync.Client, name string, o locksuite.Options) (locksuite.Lock, error) {
		var opts []rlock.Option
		if o.Lease != 0 {
			opts = append(opts, rlock.WithLease(o.Lease))
		}
		if o.Fencing {
			opts = append(opts, rlock.WithFencing())
		}
		if o.NonReentrant {
			opts = append(opts, rlock.NonReentrant())
		}
		l, err := rlock.New(c, name, opts...)
		if err != nil {
			return nil, err
		}
		return l, nil
	},
	Layout:       "lock",
	Reentrant:    true,
	Lease:        true,
	Fencing:      true,
	NonReentrant: true,
	Kept: func(name string, o locksuite.Options) []string {
		if o.Fencing {
			return []string{"redisson_lock_token:{" + name + "}"}
		}
		return nil
	},
	// The clients record lingers a while after a client's last wait, and a hand-over's mark outlives
	// the grant among the waiter records.
	Lingering: func(name string, handedOver bool) []string {
		keys := []string{"redisync_lock_clients:{" + name + "}"}
		if handedOver {
			keys = append(keys, "redisync_lock_waiters:{"+name+"}")
		}
		return keys
	},
}

func TestConformance(t *testing.T) { locksuite.Run(t, Kind) }
