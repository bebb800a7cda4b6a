package rwlock_test

import (
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit/locksuite"
	"github.com/redisync/redisync/rwlock"
)

// side makes one side of the RWLock called name: its read lock or its write lock.
func side(read bool) func(c *redisync.Client, name string, o locksuite.Options) (locksuite.Lock, error) {
	return func(c *redisync.Client, name string, o locksuite.Options) (locksuite.Lock, error) {
		var opts []rwlock.Option
		if o.Lease != 0 {
			opts = append(opts, rwlock.WithLease(o.Lease))
		}
		if o.NonReentrant {
			opts = append(opts, rwlock.NonReentrant())
		}
		rw, err := rwlock.New(c, name, opts...)
		if err != nil {
			return nil, err
		}
		if read {
			return rw.ReadLock(), nil
		}
		return rw.WriteLock(), nil
	}
}

// ReadKind and WriteKind are the two sides of package rwlock's lock for the conformance suite.
var (
	ReadKind = locksuite.Kind{
		Name: "rwlock read",
		New:  side(true),
		Rival: func(c *redisync.Client, name string) (locksuite.Lock, error) {
			return side(false)(c, name, locksuite.Options{})
		},
		Layout:       "rwlock",
		Shared:       true,
		Reentrant:    true,
		Lease:        true,
		NonReentrant: true,
	}
	WriteKind = locksuite.Kind{
		Name:         "rwlock write",
		New:          side(false),
		Layout:       "rwlock",
		Reentrant:    true,
		Lease:        true,
		NonReentrant: true,
	}
)

func TestConformance(t *testing.T) {
	t.Run("read", func(t *testing.T) { locksuite.Run(t, ReadKind) })
	t.Run("write", func(t *testing.T) { locksuite.Run(t, WriteKind) })
}
