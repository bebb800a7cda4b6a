// Package pubsub is the release notifier that redisync's waiters park on, and that a primitive of
// one's own can park on too (see the Example): get a Client's with redisync.Client.Notifier.
//
// The way to wait without missing a release: Subscribe, wait until Ready, then try (a Lua script of
// package lua that changes state and publishes what it freed); when the try fails, Wait for the next
// message and try again. A message that came between the try and the Wait is kept for the Wait.
//
// One Notifier serves one client. It keeps a single subscription connection (on a Redis 7+ cluster,
// sharded subscriptions on the connections of the nodes that own the channels), subscribes a channel
// while at least one waiter waits on it and unsubscribes it when the last one leaves. A message wakes
// as many waiters, in arrival order, as the channel's Policy allows. A wake-up is kept until the waiter
// takes it, so one that arrives before the waiter parks is not lost. When the connection drops, or the
// subscriptions must move (a cluster slot moved, a master failed over and stayed up), every waiter is
// woken once the channels are subscribed again, since messages may have been missed.
//
// A message "@<tag> <payload>" is addressed: the waiter subscribed with that tag finds the payload
// with Grant, and the others are woken only as far as the policy's budget goes beyond that waiter's
// weight (none under WakeOne, all under WakeAll). When no such waiter waits (it left, or has not
// registered yet), the channel's stray func gets it instead, and nobody is woken.
package pubsub

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Linger is how long a channel stays subscribed after its last waiter left. Under contention the same
// client waits on the same lock again and again: lingering spares a SUBSCRIBE and an UNSUBSCRIBE per
// wait, and lets the next waiter register before its first try instead of trying twice.
const Linger = 500 * time.Millisecond

// ErrClosed is returned by Subscribe after Close.
var ErrClosed = errors.New("pubsub: notifier closed")

// Policy turns a message into a budget: waiters are woken in arrival order while their weight fits
// in what is left of it. WakeOne and WakeAll cover locks; a semaphore uses the permit count.
type Policy func(message string) int64

// WakeOne wakes the longest-waiting waiter of weight 1.
func WakeOne(string) int64 { return 1 }

// WakeAll wakes every waiter.
func WakeAll(string) int64 { return math.MaxInt64 }

// Notifier multiplexes release notifications over one subscription connection.
type Notifier struct {
	rdb     rueidis.Client
	sharded bool

	mu     sync.Mutex
	chans  map[string]*channel
	closed bool
	kick   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup

	onReconnect atomic.Pointer[func(channels int)] // see OnReconnect
	changed     atomic.Int64                       // sharded: when a node last ended a subscription (UnixNano)
}

// topologySettles is how long after a slot move or a failover the notifier routes new subscriptions
// itself: rueidis refreshes its slot map within a second of meeting the change.
const topologySettles = 2 * time.Second

type channel struct {
	name    string
	policy  Policy
	stray   func(tag, payload string)
	waiters []*Waiter
	// subscribed: confirmed on the current connection; ready is closed then.
	subscribed bool
	ready      chan struct{}
	// resignal: the subscription was lost, wake everyone once it is back.
	resignal bool
	// idle: when the last waiter left.
	idle time.Time
	// sharded mode: a receiver goroutine runs for the channel; stopping: SUNSUBSCRIBE was sent; at:
	// the node it subscribes on, when the notifier routes it itself ("": rueidis routes it).
	receiving, stopping bool
	at                  string
}

// Waiter is one goroutine's place on a channel.
type Waiter struct {
	n      *Notifier
	ch     *channel
	weight int64
	sig    chan struct{}
	tag    string
	// grant: the payload of the message addressed to this waiter, once one came (guarded by n.mu).
	grant   string
	granted bool
}

// New returns a notifier on rdb. sharded selects SSUBSCRIBE (Redis 7+ clusters).
func New(rdb rueidis.Client, sharded bool) *Notifier {
	n := &Notifier{
		rdb:     rdb,
		sharded: sharded,
		chans:   make(map[string]*channel),
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	n.wg.Add(1)
	if sharded {
		go n.runSharded()
	} else {
		go n.run()
	}
	return n
}

// Subscribe adds a waiter of the given weight to channel. It returns at once; Ready tells when the
// subscription is confirmed. The first waiter of a channel sets its policy.
func (n *Notifier) Subscribe(name string, weight int64, policy Policy) (*Waiter, error) {
	return n.SubscribeTagged(name, "", weight, policy, nil)
}

// SubscribeTagged is Subscribe for a waiter that messages addressed to tag wake (tag "" for none).
// stray, when not nil, gets the addressed messages of the channel that no waiter takes; it runs on a
// goroutine of its own, which Close waits for. The first waiter of a channel sets its policy and its
// stray func.
func (n *Notifier) SubscribeTagged(name, tag string, weight int64, policy Policy, stray func(tag, payload string)) (*Waiter, error) {
	if weight < 1 {
		weight = 1
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	c := n.chans[name]
	if c == nil {
		c = &channel{name: name, policy: policy, stray: stray, ready: make(chan struct{})}
		n.chans[name] = c
	}
	w := &Waiter{n: n, ch: c, weight: weight, sig: make(chan struct{}, 1), tag: tag}
	c.waiters = append(c.waiters, w)
	if len(c.waiters) == 1 {
		n.poke()
	}
	return w, nil
}

// Ready is closed once the channel is subscribed; a try made after that cannot miss a release.
func (w *Waiter) Ready() <-chan struct{} {
	w.n.mu.Lock()
	defer w.n.mu.Unlock()
	return w.ch.ready
}

// C receives a value when the waiter should try again, or has been granted what it waits for (Grant).
func (w *Waiter) C() <-chan struct{} { return w.sig }

// Wait returns when a message woke the waiter (nil), or when ctx ends (its cause), or when the
// notifier is closed (ErrClosed). A message that came since the last Wait returns at once.
func (w *Waiter) Wait(ctx context.Context) error {
	select {
	case <-w.sig:
		w.n.mu.Lock()
		closed := w.n.closed
		w.n.mu.Unlock()
		if closed {
			return ErrClosed
		}
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Grant returns the payload of the message addressed to this waiter, if one came since the last call.
func (w *Waiter) Grant() (string, bool) {
	w.n.mu.Lock()
	defer w.n.mu.Unlock()
	payload, ok := w.grant, w.granted
	w.grant, w.granted = "", false
	return payload, ok
}

// Close removes the waiter. A wake-up it had not taken is passed to the next waiter, so that a waiter
// that gives up does not swallow another's turn.
func (w *Waiter) Close() {
	n := w.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c := w.ch
	for i, x := range c.waiters {
		if x == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			break
		}
	}
	select {
	case <-w.sig:
		for _, x := range c.waiters {
			if x.signal() {
				break
			}
		}
	default:
	}
	if len(c.waiters) == 0 {
		c.idle = time.Now()
	}
}

// signal wakes w unless a wake-up is already pending; it reports whether it woke it.
func (w *Waiter) signal() bool {
	select {
	case w.sig <- struct{}{}:
		return true
	default:
		return false
	}
}

// Subscribed reports whether channel is subscribed now; a waiter that registers while it is can skip
// the second try that covers the time a subscription takes.
func (n *Notifier) Subscribed(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.chans[name]
	return c != nil && c.subscribed && !c.stopping
}

// Waiters returns how many waiters wait on any channel (for leak checks).
func (n *Notifier) Waiters() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	total := 0
	for _, c := range n.chans {
		total += len(c.waiters)
	}
	return total
}

// Waiting returns how many waiters wait on channel.
func (n *Notifier) Waiting(name string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c := n.chans[name]; c != nil {
		return len(c.waiters)
	}
	return 0
}

// Channels returns how many channels are subscribed or being subscribed.
func (n *Notifier) Channels() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.chans)
}

// Close unsubscribes everything, closes the connection and wakes every waiter.
func (n *Notifier) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	close(n.done)
	for _, c := range n.chans {
		for _, w := range c.waiters {
			w.signal()
		}
	}
	n.mu.Unlock()
	n.wg.Wait()
}

func (n *Notifier) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// deliver hands a message to the channel's waiters.
func (n *Notifier) deliver(name, message string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.chans[name]
	if c == nil {
		return
	}
	if tag, payload, ok := addressed(message); ok {
		for i, w := range c.waiters {
			if w.tag == tag {
				w.grant, w.granted = payload, true
				w.signal()
				// What the policy allows beyond the addressed waiter goes to the others, in order
				// (under WakeAll, the other goroutines of an owner that was handed a lock).
				budget := c.policy(message) - w.weight
				for j, o := range c.waiters {
					if budget <= 0 {
						break
					}
					if j != i && o.weight <= budget && o.signal() {
						budget -= o.weight
					}
				}
				return
			}
		}
		if c.stray != nil && !n.closed {
			n.wg.Add(1) // Close, which sets n.closed under n.mu first, waits for it
			go func() {
				defer n.wg.Done()
				c.stray(tag, payload)
			}()
		}
		return
	}
	budget := c.policy(message)
	for _, w := range c.waiters {
		if budget <= 0 {
			break
		}
		if w.weight <= budget && w.signal() {
			budget -= w.weight
		}
	}
}

// addressed splits a message "@<tag> <payload>".
func addressed(message string) (tag, payload string, ok bool) {
	if len(message) < 2 || message[0] != '@' {
		return "", "", false
	}
	tag, payload, ok = strings.Cut(message[1:], " ")
	return tag, payload, ok && tag != ""
}

// confirmed marks channels subscribed; those that had lost their subscription wake every waiter. It
// returns how many had.
func (n *Notifier) confirmed(names ...string) (resubscribed int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, name := range names {
		c := n.chans[name]
		if c == nil || c.subscribed {
			continue
		}
		c.subscribed = true
		close(c.ready)
		if len(c.waiters) == 0 {
			n.poke() // everyone left while it was being subscribed
		}
		if c.resignal {
			c.resignal = false
			resubscribed++
			for _, w := range c.waiters {
				w.signal()
			}
		}
	}
	return resubscribed
}

// resubscribed wakes every waiter of a channel whose subscription was renewed under it.
func (n *Notifier) resubscribed(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c := n.chans[name]; c != nil {
		for _, w := range c.waiters {
			w.signal()
		}
	}
}

// dropped marks channels as no longer subscribed (connection lost, or unsubscribed).
func (n *Notifier) dropped(lost bool, names ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, name := range names {
		c := n.chans[name]
		if c == nil {
			continue
		}
		if c.subscribed {
			c.subscribed = false
			c.ready = make(chan struct{})
		}
		c.resignal = c.resignal || (lost && len(c.waiters) > 0)
	}
}

// plan returns what to subscribe and unsubscribe, and forgets channels that need neither. A channel
// to unsubscribe stops counting as subscribed at once, so no waiter registering from now on relies
// on it.
func (n *Notifier) plan() (sub, unsub []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, c := range n.chans {
		want := len(c.waiters) > 0
		switch {
		case want && !c.subscribed:
			sub = append(sub, name)
		case !want && c.subscribed && time.Since(c.idle) >= Linger:
			unsub = append(unsub, name)
			c.subscribed = false
			c.ready = make(chan struct{})
		case !want && !c.subscribed:
			delete(n.chans, name)
		}
	}
	return sub, unsub
}

// all returns every channel name.
func (n *Notifier) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	names := make([]string, 0, len(n.chans))
	for name := range n.chans {
		names = append(names, name)
	}
	return names
}

// run owns the dedicated subscription connection: it alone sends SUBSCRIBE and UNSUBSCRIBE, so the
// server sees them in the order the waiters' needs changed, and it reconnects when the connection ends.
func (n *Notifier) run() {
	defer n.wg.Done()
	backoff := 10 * time.Millisecond
	for {
		at := n.sentTo() // before Dedicate: a switch in between is then seen at the first tick
		dc, release := n.rdb.Dedicate()
		broken := dc.SetPubSubHooks(rueidis.PubSubHooks{
			OnMessage: func(m rueidis.PubSubMessage) { n.deliver(m.Channel, m.Message) },
		})
		healthy := n.serve(dc, broken, at)
		// Closing waits up to a second for the server to answer a PING: an old master that stalls
		// must not hold up the subscriptions on the new one.
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			dc.Close()
			release()
		}()
		n.dropped(true, n.all()...)
		select {
		case <-n.done:
			return
		default:
		}
		if healthy {
			backoff = 10 * time.Millisecond
		} else {
			backoff = min(2*backoff, time.Second)
		}
		select {
		case <-n.done:
			return
		case <-time.After(backoff):
		}
	}
}

// serve keeps the subscriptions of dc in line with the waiters until dc breaks or the notifier
// closes. It reports whether anything succeeded on dc.
//
// Under Sentinel, dc stays on the master it was taken from, and a failover that leaves the old master
// alive (SENTINEL FAILOVER, or a master that stalled and came back) does not break it: subscribed
// there, a channel hears nothing the new master publishes (and, since releases publish only where
// someone listens, nothing is even published). So serve also returns when the client's master (at,
// see sentTo) changes, and every channel is subscribed again on the new one.
func (n *Notifier) serve(dc rueidis.DedicatedClient, broken <-chan error, at string) (healthy bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.done:
		case <-broken:
		case <-ctx.Done():
		}
		cancel()
	}()
	n.poke()
	every := Linger / 2 // to unsubscribe channels whose linger has passed
	if at != "" {
		every = followEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return healthy
		case <-n.kick:
		case <-tick.C:
			if at != "" && n.sentTo() != at {
				return healthy // a failover: subscribe on the new master
			}
		}
		for {
			sub, unsub := n.plan()
			if len(sub) == 0 && len(unsub) == 0 {
				break
			}
			if len(sub) > 0 {
				if err := dc.Do(ctx, dc.B().Subscribe().Channel(sub...).Build()).Error(); err != nil {
					return healthy
				}
				healthy = true
				n.reconnected(n.confirmed(sub...))
			}
			if len(unsub) > 0 {
				if err := dc.Do(ctx, dc.B().Unsubscribe().Channel(unsub...).Build()).Error(); err != nil {
					return healthy
				}
			}
		}
	}
}

// followEvery is how often, under Sentinel, the notifier compares the client's master with the one
// its subscriptions are on: rueidis switches when the sentinels announce a failover, and tells nobody.
const followEvery = 100 * time.Millisecond

// sentTo returns the address of the node a Sentinel client sends to (its master, and its replica too
// when it reads from one): "" for any other client, whose connections break or redirect when their
// node no longer serves them.
func (n *Notifier) sentTo() string {
	if n.rdb.Mode() != rueidis.ClientModeSentinel {
		return ""
	}
	addrs := make([]string, 0, 2)
	for addr := range n.rdb.Nodes() {
		addrs = append(addrs, addr)
	}
	slices.Sort(addrs)
	return strings.Join(addrs, ",")
}

// runSharded keeps one receiver per wanted channel. A receiver sends its channel's SSUBSCRIBE on the
// connection of the master that serves the channel's slot, next to ordinary commands (see receive);
// one that ends while its channel is still wanted subscribes again, and its waiters are woken once
// that is confirmed.
func (n *Notifier) runSharded() {
	defer n.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	var receivers sync.WaitGroup
	tick := time.NewTicker(Linger / 2)
	defer tick.Stop()
	for {
		select {
		case <-n.done:
			// Unsubscribe explicitly: the connections belong to the rueidis client, which may live on.
			var subs []*channel
			n.mu.Lock()
			for _, c := range n.chans {
				if c.subscribed {
					subs = append(subs, &channel{name: c.name, at: c.at})
				}
			}
			n.mu.Unlock()
			for _, c := range subs {
				n.unsubscribe(ctx, c.name, c.at)
			}
			cancel()
			receivers.Wait()
			return
		case <-n.kick:
		case <-tick.C:
		}
		var start []string
		var stop []*channel
		n.mu.Lock()
		for name, c := range n.chans {
			want := len(c.waiters) > 0
			switch {
			case want && !c.receiving:
				c.receiving = true
				start = append(start, name)
			case !want && c.receiving && c.subscribed && !c.stopping && time.Since(c.idle) >= Linger:
				c.stopping = true
				c.subscribed = false
				c.ready = make(chan struct{})
				stop = append(stop, &channel{name: name, at: c.at})
			case !want && !c.receiving:
				delete(n.chans, name)
			}
		}
		n.mu.Unlock()
		for _, name := range start {
			receivers.Add(1)
			go func() {
				defer receivers.Done()
				n.receive(ctx, name)
			}()
		}
		for _, c := range stop {
			// The receiver returns when the server confirms; it then sees nobody waits and ends.
			n.unsubscribe(ctx, c.name, c.at)
		}
	}
}

func (n *Notifier) receive(ctx context.Context, name string) {
	// rueidis resubscribes by itself when the connection is lost, without returning from Receive:
	// a second confirmation within one Receive is the sign that messages may have been missed.
	var confirmations atomic.Int64
	onSubscription := func(s rueidis.PubSubSubscription) {
		if s.Kind != "ssubscribe" {
			return
		}
		if confirmations.Add(1) > 1 {
			n.resubscribed(name)
			n.reconnected(1)
		} else {
			n.reconnected(n.confirmed(name))
		}
	}
	hook := rueidis.WithOnSubscriptionHook(ctx, onSubscription)
	// After a slot moved or a master failed over, rueidis's slot map names the old master until its
	// next refresh, up to a second later, and the old master, now a replica of the new one, accepts a
	// subscription: the channel would hear nothing, since releases publish only where someone listens
	// on the master. So a subscription that follows such a change is made on the slot's master, which
	// the notifier finds itself (see slotMaster), and one made shortly after the notifier saw a
	// change too; any other goes where rueidis routes it, which costs no round trip more.
	at := ""
	fails := 0 // rounds in a row that subscribed nothing
	for {
		confirmations.Store(0)
		if at == "" && time.Since(time.Unix(0, n.changed.Load())) < topologySettles {
			at = n.slotMaster(ctx, name, "")
		}
		err := n.subscribeAt(ctx, hook, at, name, onSubscription)
		ours, want := n.stillWanted(ctx, name)
		if !want {
			return
		}
		// Still wanted: the subscription ended under us (connection lost, slot moved, or an
		// unsubscribe overtaken by a new waiter). Messages may have been missed.
		n.dropped(true, name)
		_, isMoved := movedTo(err)
		at = n.resubscribeAt(ctx, name, at, err, ours)
		if confirmations.Load() > 0 {
			fails = 0
		} else {
			fails++
		}
		// A moved slot is followed at once; a redirect that leads nowhere, or a connection that
		// fails, is tried again after a pause that grows.
		var pause time.Duration
		if fails > 1 || (err != nil && !isMoved) {
			pause = min(5*time.Millisecond<<min(fails, 8), time.Second)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// unsubscribe sends SUNSUBSCRIBE for channel where it was subscribed: on the node at, when the
// notifier routed it itself, since rueidis may route it elsewhere until it refreshes its slot map.
func (n *Notifier) unsubscribe(ctx context.Context, channel, at string) {
	if node := n.rdb.Nodes()[at]; at != "" && node != nil {
		node.Do(ctx, node.B().Sunsubscribe().Channel(channel).Build().Pin()) // see slotMaster
		return
	}
	n.rdb.Do(ctx, n.rdb.B().Sunsubscribe().Channel(channel).Build())
}

// subscribeAt subscribes name at the node at ("": where rueidis routes it, which resubscribes when
// its connection breaks) and receives until the subscription ends.
func (n *Notifier) subscribeAt(ctx, hook context.Context, at, name string, onSubscription func(rueidis.PubSubSubscription)) error {
	n.mu.Lock()
	if c := n.chans[name]; c != nil {
		c.at = at // where the subscription is made, for its unsubscribe (runSharded)
	}
	n.mu.Unlock()
	if at != "" {
		return n.receiveOn(ctx, at, name, onSubscription)
	}
	return n.rdb.Receive(hook, n.rdb.B().Ssubscribe().Channel(name).Build(), func(m rueidis.PubSubMessage) {
		n.deliver(m.Channel, m.Message)
	})
}

// stillWanted reports, once a subscription of name ended, whether it is still wanted (it has
// waiters, and ctx has not ended), and whether its end was an unsubscribe of ours that a new waiter
// overtook (ours). One no longer wanted is marked stopped.
func (n *Notifier) stillWanted(ctx context.Context, name string) (ours, want bool) {
	n.mu.Lock()
	c := n.chans[name]
	if c != nil && len(c.waiters) > 0 && ctx.Err() == nil {
		ours, c.stopping = c.stopping, false
		n.mu.Unlock()
		return ours, true
	}
	if c != nil {
		c.receiving, c.stopping, c.at = false, false, ""
		if c.subscribed {
			c.subscribed = false
			c.ready = make(chan struct{})
		}
	}
	n.mu.Unlock()
	n.poke()
	return false, false
}

// resubscribeAt returns where name is subscribed again after its subscription at at ended with err
// ("": where rueidis routes it); ours: the end was an unsubscribe of ours.
func (n *Notifier) resubscribeAt(ctx context.Context, name, at string, err error, ours bool) string {
	moved, isMoved := movedTo(err)
	if isMoved || (err == nil && !ours) {
		n.changed.Store(time.Now().UnixNano())
	}
	switch {
	case isMoved:
		return moved // the node no longer serves the slot: it named the master that does
	case err == nil && !ours:
		// The node unsubscribed the channel: its slot moved, or its master failed over (Redis 7
		// tells the subscribers of a slot that leaves a master). The node knows where the slot
		// went.
		return n.slotMaster(ctx, name, at)
	case err != nil:
		return "" // the connection, or no confirmation: routed anew
	}
	return at
}

// receiveOn subscribes channel on the node at and receives until the subscription ends. It returns
// the node's MOVED when the node does not serve the channel's slot, nil when the node unsubscribed
// it, and an error when the node does not confirm within a second or the connection fails: unlike
// the cluster client, a node's client would resubscribe on that node for as long as it cannot reach
// it, where rueidis finds another node for the slot.
func (n *Notifier) receiveOn(ctx context.Context, at, channel string, onSubscription func(rueidis.PubSubSubscription)) error {
	node := n.rdb.Nodes()[at]
	if node == nil {
		return errors.New("pubsub: node " + at + " is not known")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var subscribed atomic.Bool
	t := time.AfterFunc(time.Second, func() {
		if !subscribed.Load() {
			cancel(errors.New("pubsub: node " + at + " did not confirm a subscription within a second"))
		}
	})
	defer t.Stop()
	ctx = rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		subscribed.Store(true)
		onSubscription(s)
	})
	ctx = rueidis.WithOnReceiveReturnHook(ctx, func(err error, _ rueidis.CommandClient) error {
		if _, fromRedis := rueidis.IsRedisErr(err); err != nil && !fromRedis {
			cancel(err)
		}
		return err
	})
	err := node.Receive(ctx, node.B().Ssubscribe().Channel(channel).Build().Pin(), func(m rueidis.PubSubMessage) { // see slotMaster
		n.deliver(m.Channel, m.Message)
	})
	if err != nil && context.Cause(ctx) != nil {
		return context.Cause(ctx)
	}
	return err
}

// slotMaster returns the master that serves key's slot, or "" when no node tells within a second. It
// asks the node at (any node when ""): a master that serves the slot answers (or answers ASK while
// the slot is leaving it: it serves the slot's channels until the move ends), and any other node
// answers MOVED with the master, which is asked in turn. Nodes disagree for a moment after a
// failover; a node that cannot be reached makes it ask another.
func (n *Notifier) slotMaster(ctx context.Context, key, at string) string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for hops := 0; ctx.Err() == nil; hops++ {
		nodes := n.rdb.Nodes()
		node := nodes[at]
		if node == nil && at != "" {
			// A node the client has no connection to yet (a replica just promoted, or a new
			// master): a command that rueidis redirects there makes one.
			n.rdb.Do(ctx, n.rdb.B().Exists().Key(key).Build())
			nodes = n.rdb.Nodes()
			node = nodes[at]
		}
		if node == nil {
			for addr, c := range nodes {
				at, node = addr, c
				break
			}
		}
		if node == nil {
			return ""
		}
		if hops >= 4 { // going round: let the nodes agree
			time.Sleep(min(10*time.Millisecond<<min(hops-4, 5), 100*time.Millisecond))
		}
		// Pinned, never recycled: a node's client recycles a command once answered, and a connection
		// that expired under the command, whose writer read it, is not waited for (the race detector
		// reports the recycling).
		err := node.Do(ctx, node.B().Exists().Key(key).Build().Pin()).Error()
		moved, isMoved := movedTo(err)
		switch {
		case isMoved:
			at = moved
		case err == nil || isAsk(err):
			return at
		default:
			at = "" // not reachable: ask another
		}
	}
	return ""
}

// isAsk reports whether err is an ASK redirection.
func isAsk(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	if ok {
		_, ok = re.IsAsk()
	}
	return ok
}

// movedTo returns the node that a MOVED error names.
func movedTo(err error) (string, bool) {
	if re, ok := rueidis.IsRedisErr(err); ok {
		return re.IsMoved()
	}
	return "", false
}
