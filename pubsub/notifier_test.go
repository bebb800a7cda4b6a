package pubsub_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/pubsub"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func setup(t *testing.T) (*miniredis.Miniredis, rueidis.Client, *pubsub.Notifier) {
	t.Helper()
	m := miniredis.RunT(t)
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	n := pubsub.New(rdb, false)
	t.Cleanup(func() { n.Close(); rdb.Close() })
	return m, rdb, n
}

func ready(t *testing.T, w *pubsub.Waiter) {
	t.Helper()
	select {
	case <-w.Ready():
	case <-time.After(2 * time.Second):
		t.Fatal("never subscribed")
	}
}

func woken(w *pubsub.Waiter, within time.Duration) bool {
	select {
	case <-w.C():
		return true
	case <-time.After(within):
		return false
	}
}

func publish(t *testing.T, rdb rueidis.Client, ch, msg string) {
	t.Helper()
	if err := rdb.Do(context.Background(), rdb.B().Publish().Channel(ch).Message(msg).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

func TestWakeOneWakesTheOldestOnly(t *testing.T) {
	_, rdb, n := setup(t)
	var ws []*pubsub.Waiter
	for i := 0; i < 3; i++ {
		w, err := n.Subscribe("ch", 1, pubsub.WakeOne)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ws = append(ws, w)
	}
	ready(t, ws[0])
	publish(t, rdb, "ch", "0")
	if !woken(ws[0], time.Second) {
		t.Fatal("the oldest waiter was not woken")
	}
	if woken(ws[1], 100*time.Millisecond) || woken(ws[2], 10*time.Millisecond) {
		t.Fatal("one message woke more than one waiter")
	}
}

func TestBudgetWakesWaitersThatFit(t *testing.T) {
	_, rdb, n := setup(t)
	count := func(m string) int64 { v, _ := strconv.ParseInt(m, 10, 64); return v }
	big, _ := n.Subscribe("sem", 5, count) // wants 5: does not fit in 3
	two, _ := n.Subscribe("sem", 2, count)
	one, _ := n.Subscribe("sem", 1, count)
	extra, _ := n.Subscribe("sem", 1, count) // nothing left for it
	for _, w := range []*pubsub.Waiter{big, two, one, extra} {
		defer w.Close()
	}
	ready(t, big)
	publish(t, rdb, "sem", "3")
	if !woken(two, time.Second) || !woken(one, time.Second) {
		t.Fatal("a budget of 3 did not wake the waiters for 2 and 1")
	}
	if woken(big, 100*time.Millisecond) || woken(extra, 10*time.Millisecond) {
		t.Fatal("waiters beyond the budget were woken")
	}
}

func TestWakeUpIsKeptAndPassedOn(t *testing.T) {
	_, rdb, n := setup(t)
	a, _ := n.Subscribe("ch", 1, pubsub.WakeOne)
	b, _ := n.Subscribe("ch", 1, pubsub.WakeOne)
	defer b.Close()
	ready(t, a)
	publish(t, rdb, "ch", "0")
	time.Sleep(100 * time.Millisecond) // delivered to a, which has not looked yet
	a.Close()                          // a gives up without taking it: b gets its turn
	if !woken(b, time.Second) {
		t.Fatal("a wake-up that its waiter did not take was lost")
	}
}

func TestIdleChannelIsUnsubscribed(t *testing.T) {
	m, _, n := setup(t)
	w, _ := n.Subscribe("idle", 1, pubsub.WakeAll)
	ready(t, w)
	if got := m.PubSubChannels(""); len(got) != 1 {
		t.Fatalf("channels while waiting: %v", got)
	}
	w.Close()
	// The server drops the channel before the notifier hears that it did, and forgets it.
	deadline := time.Now().Add(pubsub.Linger + 2*time.Second)
	for len(m.PubSubChannels("")) != 0 || n.Channels() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%v after its last waiter left: server channels %v, notifier follows %d", pubsub.Linger+2*time.Second, m.PubSubChannels(""), n.Channels())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCloseWakesWaitersAndRefusesNew(t *testing.T) {
	_, _, n := setup(t)
	w, _ := n.Subscribe("ch", 1, pubsub.WakeOne)
	defer w.Close()
	n.Close()
	if !woken(w, time.Second) {
		t.Fatal("Close did not wake the waiter")
	}
	if _, err := n.Subscribe("ch", 1, pubsub.WakeOne); err != pubsub.ErrClosed {
		t.Fatalf("Subscribe after Close = %v, want ErrClosed", err)
	}
}

// An addressed message wakes the waiter with its tag only, whatever the policy, and hands it the
// payload; one for a tag nobody waits with goes to the channel's stray func.
func TestAddressedMessages(t *testing.T) {
	_, rdb, n := setup(t)
	strays := make(chan string, 1)
	stray := func(tag, payload string) { strays <- tag + "=" + payload }
	first, err := n.SubscribeTagged("ch", "a", 1, pubsub.WakeOne, stray)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := n.SubscribeTagged("ch", "b", 1, pubsub.WakeOne, stray)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	ready(t, first)

	publish(t, rdb, "ch", "@b 42")
	if !woken(second, time.Second) {
		t.Fatal("the addressed waiter was not woken")
	}
	if p, ok := second.Grant(); !ok || p != "42" {
		t.Fatalf("Grant() = %q, %v; want 42", p, ok)
	}
	if woken(first, 100*time.Millisecond) {
		t.Fatal("a message addressed to another waiter woke this one")
	}
	if _, ok := first.Grant(); ok {
		t.Fatal("a waiter holds a grant addressed to another")
	}

	publish(t, rdb, "ch", "@gone 7")
	select {
	case s := <-strays:
		if s != "gone=7" {
			t.Fatalf("stray got %q", s)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a message for a waiter that is not there did not reach the stray func")
	}
	if woken(first, 100*time.Millisecond) || woken(second, 0) {
		t.Fatal("a message for a waiter that is not there woke another")
	}
}

// Under WakeAll an addressed message also wakes the channel's other waiters, without the grant: the
// other goroutines of an owner that was handed a lock may go too.
func TestAddressedMessageUnderWakeAll(t *testing.T) {
	_, rdb, n := setup(t)
	granted, err := n.SubscribeTagged("owner", "a", 1, pubsub.WakeAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer granted.Close()
	other, err := n.SubscribeTagged("owner", "b", 1, pubsub.WakeAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ready(t, granted)

	publish(t, rdb, "owner", "@a 42")
	if !woken(granted, time.Second) {
		t.Fatal("the addressed waiter was not woken")
	}
	if p, ok := granted.Grant(); !ok || p != "42" {
		t.Fatalf("Grant() = %q, %v; want 42", p, ok)
	}
	if !woken(other, time.Second) {
		t.Fatal("the other waiter of a WakeAll channel was not woken")
	}
	if _, ok := other.Grant(); ok {
		t.Fatal("the other waiter holds a grant addressed to another")
	}
}
