package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Redisson's RedissonObject.prefixName and suffixName, spelled out here so that a change of layout
// fails the tests.
func prefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

func suffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// oddNames hold braces that Redisson's layout does not wrap ('{') or wraps into another tag ('}'),
// and a hash-tagged name, which on a cluster alone keeps Redisson's names in its slot.
var oddNames = []string{"cfg}v2", "cfg{v2", "a{}b", "{job}:7"}

// sharedOn reports whether a Java process can use name on tg: everywhere but on a cluster, where
// Redisson's side keys must hash by a tag to the name's slot.
func sharedOn(tg *testkit.Target, name string) bool {
	if tg.Name != "cluster" {
		return true
	}
	k := prefixName("p", name)
	return strings.Contains(k, "{") && strings.Index(k[strings.Index(k, "{")+1:], "}") > 0 &&
		send.Slot(k) == send.Slot(name)
}

// javaUnlock is Redisson's RLock.unlock() of a lock its thread holds once (the hold count reaches 0).
const javaUnlock = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then return nil; end; " +
	"local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); " +
	"if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[1]); return 0; " +
	"else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[3]); return 1; end; return nil;"

// Every lock kind on names with braces of their own (and, mapped, on plain names): Go and Java meet on
// Redisson's keys and channels, both ways.
func TestRedissonNamesOfLocks(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		for i, base := range oddNames {
			name := fmt.Sprintf("%s-%d-%d", base, i, time.Now().UnixNano())
			if !sharedOn(tg, name) {
				continue // Redisson's own scripts fail there (CROSSSLOT)
			}
			t.Run(base, func(t *testing.T) { locksMeet(t, tg, name, name) })
		}
		t.Run("mapped", func(t *testing.T) {
			name := fmt.Sprintf("orders-%d", time.Now().UnixNano())
			locksMeet(t, tg, name, "tenant-a:"+name, redisync.WithNameMapper(func(n string) string { return "tenant-a:" + n }))
		})
	})
}

// locksMeet checks, for the object a Go Client with opts calls name and Redisson calls key, that a
// Java waiter hears a Go unlock and a Go waiter a Java unlock, on Redisson's channels, and that the
// side keys are Redisson's.
func locksMeet(t *testing.T, tg *testkit.Target, name, key string, opts ...redisync.Option) {
	ctx := context.Background()
	rdb := tg.Redis(t)
	c := tg.Client(t, append(opts, redisync.WithRecheckInterval(time.Minute))...)
	j := tg.Java(t)
	const javaOwner = "7f0e3c1a-0000-4000-8000-000000000001:1"

	// rlock: Go unlocks, the Java waiter hears it; Java unlocks, the Go waiter gets the lock.
	l, err := rlock.New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	ch := prefixName("redisson_lock__channel", key)
	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := testkit.DoString(t, rdb, "HLEN", key); n != "1" {
		t.Fatalf("key %q holds %s owners, want ours", key, n)
	}
	sub := j.Subscribe(ch)
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	sub.Until(10*time.Second, "Java lock", func() bool {
		return j.EvalInt("return redis.call('hsetnx', KEYS[1], ARGV[1], 1)", []string{key}, javaOwner) == 1
	})
	testkit.Do(t, rdb, "PEXPIRE", key, "600000")
	done := make(chan error, 1)
	go func() {
		held, err := l.Lock(ctx)
		if err == nil {
			err = l.Unlock(held)
		}
		done <- err
	}()
	waitListening(t, tg, ch, 2)
	j.Eval(javaUnlock, []string{key, ch}, "30000", javaOwner, "0", j.PublishCommand())
	awaitDone(t, done, "Go lock after a Java unlock")

	// fairlock: a Go waiter queues in Redisson's queue and timeout set and listens on its own Redisson
	// channel; the Java holder's unlock message there gives it the lock.
	f, err := fairlock.New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Do(t, rdb, "HSET", key, javaOwner, "1")
	testkit.Do(t, rdb, "PEXPIRE", key, "600000")
	go func() {
		held, err := f.Lock(ctx)
		if err == nil {
			err = f.Unlock(held)
		}
		done <- err
	}()
	queue, timeouts := prefixName("redisson_lock_queue", key), prefixName("redisson_lock_timeout", key)
	var owner string
	testkit.Eventually(t, 5*time.Second, func() error {
		owner = strings.Trim(testkit.DoString(t, rdb, "LRANGE", queue, "0", "-1"), "[]")
		if owner == "" || testkit.DoString(t, rdb, "ZCARD", timeouts) != "1" {
			return fmt.Errorf("no Go waiter in %q and %q", queue, timeouts)
		}
		return nil
	})
	own := ch + ":" + owner
	waitListening(t, tg, own, 1)
	testkit.Do(t, rdb, "DEL", key)
	j.Publish(own, "0")
	awaitDone(t, done, "Go fair lock after a Java unlock")

	// rwlock: a Go reader's lease key is Redisson's; a Go writer waits for a Java reader, whose
	// unlock message on Redisson's channel lets it in.
	rw, err := rwlock.New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	rheld, err := rw.ReadLock().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fields := testkit.DoString(t, rdb, "HKEYS", key)
	var reader string
	for _, fl := range strings.Fields(strings.Trim(fields, "[]")) {
		if fl != "mode" {
			reader = fl
		}
	}
	if lease := suffixName(key, reader) + ":rwlock_timeout:1"; testkit.DoString(t, rdb, "EXISTS", lease) != "1" {
		t.Fatalf("no read lease at Redisson's key %q", lease)
	}
	if err := rw.ReadLock().Unlock(rheld); err != nil {
		t.Fatal(err)
	}
	rwch := prefixName("redisson_rwlock", key)
	testkit.Do(t, rdb, "HSET", key, "mode", "read", javaOwner, "1")
	testkit.Do(t, rdb, "PEXPIRE", key, "600000")
	go func() {
		held, err := rw.WriteLock().Lock(ctx)
		if err == nil {
			err = rw.WriteLock().Unlock(held)
		}
		done <- err
	}()
	waitListening(t, tg, rwch, 1)
	testkit.Do(t, rdb, "DEL", key)
	j.Publish(rwch, "0")
	awaitDone(t, done, "Go write lock after a Java read unlock")

	// The rate limiter's keys, the semaphore's channel and the latch's key are Redisson's too.
	rl, err := ratelimit.New(c, name+"r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rl.TrySetRate(ctx, ratelimit.Config{Rate: 2, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := rl.TryAcquire(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{key + "r", suffixName(key+"r", "value"), suffixName(key+"r", "permits")} {
		if testkit.DoString(t, rdb, "EXISTS", k) != "1" {
			t.Fatalf("rate limiter key %q missing", k)
		}
	}
	s, err := semaphore.New(c, name+"s")
	if err != nil {
		t.Fatal(err)
	}
	ssub := j.Subscribe(prefixName("redisson_sc", key+"s"))
	if err := s.Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ssub.Until(10*time.Second, "Java semaphore", func() bool { return testkit.DoString(t, rdb, "GET", key+"s") == "1" })
	cd, err := countdown.New(c, name+"c")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := cd.TrySetCount(ctx, 1); !ok || err != nil {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	if testkit.DoString(t, rdb, "GET", key+"c") != "1" {
		t.Fatalf("latch key %q missing", key+"c")
	}
	for _, k := range []string{key, key + "r", suffixName(key+"r", "value"), suffixName(key+"r", "permits"), key + "s", key + "c"} {
		testkit.Do(t, rdb, "DEL", k)
	}
}

// waitListening waits until channel has at least n subscribers.
func waitListening(t *testing.T, tg *testkit.Target, channel string, n int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		if k := tg.Subscribers(t, channel); k < n {
			return fmt.Errorf("%d subscribers on %q, want %d", k, channel, n)
		}
		return nil
	})
}

func awaitDone(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10s", what)
	}
}

// Two tenants with their own prefix on one Redis do not exclude each other.
func TestNameMapperKeepsTenantsApart(t *testing.T) {
	tg := testkit.Standalone(t)
	ctx := context.Background()
	name := fmt.Sprintf("orders-%d", time.Now().UnixNano())
	var held []context.Context
	var locks []*rlock.Lock
	for _, tenant := range []string{"a:", "b:"} {
		c := tg.Client(t, redisync.WithNameMapper(func(n string) string { return tenant + n }))
		l, err := rlock.New(c, name)
		if err != nil {
			t.Fatal(err)
		}
		if l.Name() != tenant+name {
			t.Fatalf("Name() = %q, want the mapped name", l.Name())
		}
		h, err := l.TryLock(ctx, 0)
		if err != nil {
			t.Fatalf("tenant %s: %v", tenant, err)
		}
		held, locks = append(held, h), append(locks, l)
	}
	for i, l := range locks {
		if err := l.Unlock(held[i]); err != nil {
			t.Fatal(err)
		}
	}
	c := tg.Client(t, redisync.WithNameMapper(func(string) string { return "" }))
	if _, err := rlock.New(c, name); !errors.Is(err, redisync.ErrInvalidArgument) {
		t.Fatalf("a name mapped to \"\": %v, want ErrInvalidArgument", err)
	}
}
