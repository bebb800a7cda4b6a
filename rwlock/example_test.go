package rwlock_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rwlock"
)

func Example() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	c, err := redisync.New(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	rw, err := rwlock.New(c, "catalog")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	// Write, then keep reading while letting other readers in (downgrade).
	w, err := rw.WriteLock().Lock(ctx)
	if err != nil {
		panic(err)
	}
	r, err := rw.ReadLock().Lock(w)
	if err != nil {
		panic(err)
	}
	if err := rw.WriteLock().Unlock(w); err != nil {
		panic(err)
	}
	err = rw.ReadLock().Do(ctx, func(ctx context.Context) error {
		fmt.Println("another reader reads beside the downgraded writer")
		return nil
	})
	if err != nil {
		panic(err)
	}
	_, err = rw.WriteLock().TryLock(ctx, 0)
	fmt.Println("writer while someone reads:", err != nil)
	if err := rw.ReadLock().Unlock(r); err != nil {
		panic(err)
	}
	locked, _ := rw.ReadLock().IsLocked(ctx)
	fmt.Println("locked after the last read unlock:", locked)
	// Output:
	// another reader reads beside the downgraded writer
	// writer while someone reads: true
	// locked after the last read unlock: false
}
