package rlock_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// A release wakes one waiting client, not every client that waits: with 8 clients contending, an
// acquisition costs about one failed try, one successful try and one release. Waking every client
// (Redisson's way) costs about 10.
func TestNoHerd(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		locks := make([]*rlock.Lock, 8)
		for i := range locks {
			locks[i] = newLock(t, tg.Client(t), "no-herd")
		}
		var sec testkit.Section
		run := func(n int) {
			var wg sync.WaitGroup
			for _, l := range locks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < n; i++ {
						held, err := l.Lock(context.Background())
						if err != nil {
							t.Error(err)
							return
						}
						sec.Enter()
						time.Sleep(200 * time.Microsecond)
						sec.Leave()
						if err := l.Unlock(held); err != nil {
							t.Error(err)
						}
					}
				}()
			}
			wg.Wait()
		}
		run(5) // warm up: scripts loaded, channels subscribed
		before := tg.Calls(t, "evalsha", "eval")
		run(40)
		calls := float64(tg.Calls(t, "evalsha", "eval")-before) / (8 * 40)
		t.Logf("%.2f script calls per acquisition", calls)
		if calls > 4.5 {
			t.Fatalf("%.2f script calls per acquisition with 8 waiting clients: a release wakes more than one", calls)
		}
		if sec.Max() != 1 {
			t.Fatalf("%d owners inside at once", sec.Max())
		}
	})
}

// A waiter whose client closed while it waited leaves records behind; the next release passes over
// them and wakes a live waiter at once.
func TestClosedWaiterDoesNotStallTheLine(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		holder := newLock(t, tg.Client(t), "closed-waiter")
		held := mustLock(t, holder, context.Background())

		gone := tg.Client(t, slow)
		dead := newLock(t, gone, "closed-waiter")
		deadDone := make(chan error, 1)
		go func() {
			_, err := dead.Lock(context.Background())
			deadDone <- err
		}()
		waiters(t, tg, "closed-waiter", 1) // its record is written first: it is first in line
		live := newLock(t, tg.Client(t, slow), "closed-waiter")
		got := make(chan error, 1)
		go func() {
			h, err := live.Lock(context.Background())
			if err == nil {
				err = live.Unlock(h)
			}
			got <- err
		}()
		waiters(t, tg, "closed-waiter", 2)
		gone.Close()
		<-deadDone
		mustUnlock(t, holder, held)
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(15 * time.Second): // the live waiter's own next try is a minute away
			t.Fatal("the release woke the closed client's waiter, and nobody else")
		}
	})
}

// A Java process waiting on Redisson's channel is woken by our release even while our own waiters,
// woken on their clients' channels, are queued too.
func TestJavaWaiterWokenBesideOurs(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		rdb := tg.Redis(t)
		holder := newLock(t, tg.Client(t), "java-beside")
		held := mustLock(t, holder, context.Background())

		// Our waiter, queued with a record and a wake channel.
		ours := newLock(t, tg.Client(t, slow), "java-beside")
		oursDone := make(chan error, 1)
		go func() {
			h, err := ours.Lock(context.Background())
			if err == nil {
				err = ours.Unlock(h)
			}
			oursDone <- err
		}()

		// The Java waiter: a subscriber on Redisson's channel that leaves no record.
		channel := "redisson_lock__channel:{java-beside}"
		sub := rdb.B().Subscribe().Channel(channel).Build()
		if tg.Name == "cluster" {
			sub = rdb.B().Ssubscribe().Channel(channel).Build()
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		heard := make(chan string, 4)
		subscribed := make(chan struct{})
		var once sync.Once
		hook := rueidis.WithOnSubscriptionHook(ctx, func(rueidis.PubSubSubscription) { once.Do(func() { close(subscribed) }) })
		recvDone := make(chan struct{})
		go func() {
			defer close(recvDone)
			rdb.Receive(hook, sub, func(m rueidis.PubSubMessage) { heard <- m.Message })
		}()
		<-subscribed
		waiters(t, tg, "java-beside", 1)

		mustUnlock(t, holder, held)
		select {
		case m := <-heard:
			if m != "0" {
				t.Fatalf("the Java waiter heard %q, want Redisson's unlock message 0", m)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("our release did not wake the Java waiter")
		}
		if err := <-oursDone; err != nil {
			t.Fatal(err)
		}
		unsub := rdb.B().Unsubscribe().Channel(channel).Build()
		if tg.Name == "cluster" {
			unsub = rdb.B().Sunsubscribe().Channel(channel).Build()
		}
		rdb.Do(context.Background(), unsub)
		cancel()
		<-recvDone
	})
}

// A Client whose wake channel is still being subscribed when a release hands it the lock, while it
// listens on the lock's channel already (on a cluster each channel is a sharded subscription of its
// own, confirmed apart), stays listed among the lock's clients: the release takes the grant back
// and drops the Client's records, but the Client still listens, and a release that found it
// listening unlisted would take it for a Java waiter and leave the lock free for a turn nobody takes.
func TestClientStillSubscribingStaysListed(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		const name = "still-subscribing"
		rdb := tg.Redis(t)
		records, listed := "redisync_lock_waiters:{"+name+"}", "redisync_lock_clients:{"+name+"}"
		holder := newLock(t, tg.Client(t), name)
		held := mustLock(t, holder, context.Background())

		// The Client, as the lock's keys and its subscriptions show it: listed, listening on the
		// lock's channel, and recorded by a try of its waiter; its wake channel not subscribed yet.
		other := newJavaLock(t, tg, name) // its listener: a subscription that never tries
		client := other.id
		defer other.listen()()
		t.Cleanup(func() { testkit.Do(t, rdb, "DEL", listed, records) })
		now := time.Now()
		testkit.Do(t, rdb, "ZADD", listed, strconv.FormatInt(now.Add(time.Minute).UnixMilli(), 10), client)
		testkit.Do(t, rdb, "ZADD", records, strconv.FormatInt(now.Add(time.Minute).UnixMicro(), 10), client+":1:1:30000:0")

		mustUnlock(t, holder, held)
		if recs := waiterRecords(t, tg, name); len(recs) != 0 {
			t.Fatalf("the release kept the records of a Client that did not hear its grant: %q", recs)
		}
		if testkit.DoString(t, rdb, "ZSCORE", listed, client) == "" {
			t.Fatalf("the release dropped from %s a Client that listens on the lock's channel", listed)
		}
		if testkit.DoString(t, rdb, "EXISTS", name) != "0" {
			t.Fatal("the grant nobody heard was not taken back")
		}
	})
}
