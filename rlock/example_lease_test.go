package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// A lease for one acquisition, Redisson's lock.lock(10, SECONDS): the lock frees itself after 10 s
// unless unlocked before, and the hold's ctx has that end as its deadline.
func ExampleLock_LockFor() {
	c, stop := testkit.QuickClient()
	defer stop()
	lock, _ := rlock.New(c, "nightly-report") // the watchdog keeps its other holds
	held, err := lock.LockFor(context.Background(), 10*time.Second)
	if err != nil {
		panic(err)
	}
	defer lock.Unlock(held)
	deadline, _ := held.Deadline()
	fmt.Println("ends within 10s:", time.Until(deadline) <= 10*time.Second)
	// Output: ends within 10s: true
}

// Redisson's lock.tryLock(100, 10, SECONDS): wait at most 100 ms here, hold at most 10 s.
func ExampleLock_TryLockFor() {
	c, stop := testkit.QuickClient()
	defer stop()
	lock, _ := rlock.New(c, "nightly-report")
	held, _ := lock.Lock(context.Background())
	_, err := lock.TryLockFor(context.Background(), 100*time.Millisecond, 10*time.Second) // another owner
	fmt.Println(errors.Is(err, redisync.ErrNotAcquired))
	lock.Unlock(held)
	// Output: true
}

// A holder whose work runs longer than it thought extends its fixed lease (Redisson's expire on a
// held lock): the lock and the hold's ctx last an hour more.
func ExampleLock_Extend() {
	c, stop := testkit.QuickClient()
	defer stop()
	lock, _ := rlock.New(c, "nightly-report")
	held, _ := lock.LockFor(context.Background(), 10*time.Second)
	defer lock.Unlock(held)
	if err := lock.Extend(held, time.Hour); err != nil {
		panic(err)
	}
	deadline, _ := held.Deadline()
	fmt.Println("ends in more than 10s:", time.Until(deadline) > 10*time.Second)

	// Another owner holds nothing to extend.
	err := lock.Extend(redisync.WithOwner(context.Background()), time.Hour)
	fmt.Println(errors.Is(err, redisync.ErrNotHeld))
	// Output:
	// ends in more than 10s: true
	// true
}

// An owner id stands for Redisson's thread id: isHeldByThread(id) is IsHeldBy(ctx, id).
func ExampleLock_IsHeldBy() {
	c, stop := testkit.QuickClient()
	defer stop()
	lock, _ := rlock.New(c, "nightly-report")
	held, _ := lock.Lock(context.Background())
	defer lock.Unlock(held)
	owner, _ := redisync.OwnerID(held)
	ok, _ := lock.IsHeldBy(context.Background(), owner)
	fmt.Println(ok)
	// Output: true
}
