package fairlock_test

import (
	"context"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/testkit/locksuite"
)

// Kind is package fairlock's lock for the conformance suite.
var Kind = locksuite.Kind{
	Name: "fairlock",
	New: func(c *redisync.Client, name string, o locksuite.Options) (locksuite.Lock, error) {
		var opts []fairlock.Option
		if o.Lease != 0 {
			opts = append(opts, fairlock.WithLease(o.Lease))
		}
		if o.Fencing {
			opts = append(opts, fairlock.WithFencing())
		}
		if o.NonReentrant {
			opts = append(opts, fairlock.NonReentrant())
		}
		l, err := fairlock.New(c, name, opts...)
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
	// A waiter that queued and gave up leaves its acquisition's memo for a minute, so that a try of
	// it still on its way takes no place.
	Lingering: func(name string, _ bool) []string {
		return []string{"redisync_once:{" + name + "}:*"}
	},
	Queries: func(l locksuite.Lock) map[string]func(context.Context) error {
		return map[string]func(context.Context) error{
			"Waiting": func(ctx context.Context) error { _, err := l.(*fairlock.Lock).Waiting(ctx); return err },
		}
	},
}

func TestConformance(t *testing.T) { locksuite.Run(t, Kind) }
