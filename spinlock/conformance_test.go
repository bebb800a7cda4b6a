package spinlock_test

import (
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit/locksuite"
	"github.com/redisync/redisync/spinlock"
)

// Kind is package spinlock's lock for the conformance suite.
var Kind = locksuite.Kind{
	Name: "spinlock",
	New: func(c *redisync.Client, name string, o locksuite.Options) (locksuite.Lock, error) {
		var opts []spinlock.Option
		if o.Lease != 0 {
			opts = append(opts, spinlock.WithLease(o.Lease))
		}
		if o.Fencing {
			opts = append(opts, spinlock.WithFencing())
		}
		if o.NonReentrant {
			opts = append(opts, spinlock.NonReentrant())
		}
		l, err := spinlock.New(c, name, opts...)
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
	Spins:        true,
	Kept: func(name string, o locksuite.Options) []string {
		if o.Fencing {
			return []string{"redisson_lock_token:{" + name + "}"}
		}
		return nil
	},
}

func TestConformance(t *testing.T) { locksuite.Run(t, Kind) }
