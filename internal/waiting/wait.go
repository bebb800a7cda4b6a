// Package waiting is the engine's wait loop: an acquisition tries, and between tries listens for
// release notifications and hand-overs on its channels (package pubsub), until a try acquires, its
// bound passes, its ctx ends or the client closes. A wait is a loop value whose states are methods:
// subscribe, park (and why it was woken), try. It sends through package send, and leaves holds to
// package hold; what a try sends is the primitive's (Tries).
package waiting

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/pubsub"
)

// Waiter runs the waits of one Client.
type Waiter struct {
	s        *send.Sender
	notifier *pubsub.Notifier
	ev       *hold.Events
	recheck  time.Duration // how long a waiter trusts notifications alone before it tries again
	stall    time.Duration // how long the connection may take to fail a command a stalled server never answers (0: unknown)
}

// New returns the Waiter of the Client that sends with s, listens with n and reports to ev.
func New(s *send.Sender, n *pubsub.Notifier, ev *hold.Events, recheck, stall time.Duration) *Waiter {
	return &Waiter{s: s, notifier: n, ev: ev, recheck: recheck, stall: stall}
}

// Wait describes how a primitive waits for its object.
type Wait struct {
	Channel string // where releases are announced; "" when nothing is (each try says how long to wait)
	// Wake, when set, is a channel on which this client alone is woken (a directed wake-up, see
	// rlock); the waiter listens on both.
	Wake string
	// Grants, when set, takes hand-overs: a release that gives the object to this waiter tells it with
	// a message addressed to its Tag (see pubsub) on Wake, or on Channel when there is no Wake (a
	// channel of this waiter's owner alone, see fairlock).
	Grants Grants
	Weight int64         // how much of a message's budget this waiter needs (permits; 1 for locks)
	Policy pubsub.Policy // how many waiters a message wakes
	Tries  Tries
	// List, when set, runs before the wait subscribes to its channels, for an object whose waiters
	// must be known before they listen (see rlock's clients record): ctx bounds how long it may keep
	// the wait, and an error it returns (Redis refused the listing) ends the wait.
	List interface {
		List(ctx context.Context) error
	}
	// Again, when set, makes the try after one the replicas did not acknowledge (and Undo gave back)
	// a call of its own, under a new request id: the give-back may have left the memo of the one
	// before saying what it did.
	Again interface{ Again() }
	// Lease, when not 0, is how long an acquisition holds from when its try was sent: one learnt of
	// so late (a reply or a hand-over delayed by a stalled server) that half of it has gone is given
	// back and tried again, since it could end before the watchdog's first renewal.
	Lease time.Duration
	// Hold, when set, is the acquisition the tries are for: a try that runs apart from the wait may
	// outlive Acquire, and the hold's next call waits until it, and what it gives back, are over.
	Hold *hold.Acq
}

// Tries makes the tries of one acquisition, and gives back what a try acquired that must not be
// kept: the caller's ctx ended while it ran, or the replicas did not acknowledge it (Try reports ok
// with the error). sure is false when the try's answer never came, so that Redis may or may not have
// acquired: Undo then gives back only what it finds the try took.
type Tries interface {
	Try(ctx context.Context, within send.Bounds) (ok bool, retryIn time.Duration, err error)
	Undo(ctx context.Context, sure bool)
}

// Grants takes hand-overs: a release that gives the object to a waiter and tells it with a message
// addressed to its Tag.
type Grants interface {
	// Tag names the waiter; Acquire asks for it when it starts to listen, before the try that must
	// leave a record under that name.
	Tag() string
	// Claim turns a hand-over into the acquisition: token is the fencing token it carries, and
	// score the waiter's record it was made for. False: not a grant that stands (made for a record
	// before the one the waiter's last try left, so before that try was answered: that try took it
	// or found it void, whatever order the connections delivered in), so keep waiting.
	Claim(token, score int64) bool
	// Stray gets the addressed messages of the wake channel that no waiter of this client takes: the
	// object was handed to a waiter that has left, and must be given back.
	Stray(tag, payload string)
}

// grantOf reads a hand-over's payload, "<token> <score>": the fencing token it carries, and the
// score of the waiter's record it was made for; ok is false for a malformed one.
func grantOf(payload string) (token, score int64, ok bool) {
	t, s, ok := strings.Cut(payload, " ")
	if !ok {
		return 0, 0, false
	}
	token, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if score, err = strconv.ParseInt(s, 10, 64); err != nil {
		return 0, 0, false
	}
	return token, score, true
}

// How a wait goes. Between tries a waiter waits for a release notification, the holder's remaining
// lease, or the recheck interval, whichever comes first: notifications make the handoff prompt, the
// bound makes a lost notification cheap, and a try made at the recheck at the latest reports an error
// when the server has gone, even while the channels cannot be subscribed. It subscribes before the
// second try, so a release between the two is seen.
//
// Tries run on a ctx that is not cancelled with the caller's: a command cancelled in flight may still
// run on the server, and an acquisition must never be left behind unknown. A try runs on the caller's
// goroutine, so that an uncontended acquisition costs no more than its command, unless ctx has a
// deadline, or the wait a bound, that a stalled server could make the try overrun (closer than
// send.RetryBound and the connection's stall bound): then it runs apart, and the wait returns at ctx's deadline, or
// send.Overtime after the wait bound (a try sent at the bound gets that long to be answered). Either way,
// when ctx has ended or the wait has been given up by the time a try acquires, Undo gives the
// acquisition back. A try is sent exactly once (see package send): one whose answer never comes ends the
// wait with the connection's error, and Undo gives back whatever Redis may have acquired for it.

// Acquire tries w.Tries until a try succeeds, the wait bound passes (ErrNotAcquired), ctx ends, or
// the client is closed; kind and name say what for, in events. wait < 0 means no bound but ctx; wait
// == 0 means a single try. The wait bound counts from the call. It returns the start time of the
// successful try.
func (c *Waiter) Acquire(ctx context.Context, kind, name string, wait time.Duration, w Wait) (time.Time, error) {
	m := c.Observe(kind, name, &w)
	start, err := c.Run(ctx, wait, w, m)
	m.Done(err)
	return start, err
}

// Run is Acquire, measured by m (see Observe), for a caller that reports the acquisition's end
// itself once it has recorded it.
func (c *Waiter) Run(ctx context.Context, wait time.Duration, w Wait, m *measure) (time.Time, error) {
	if err := c.live(ctx); err != nil {
		return time.Time{}, err
	}
	l := c.newLoop(ctx, wait, w)
	defer func() { l.ws.close() }() // l.ws grows below
	if err := l.subscribeEarly(); err != nil {
		return time.Time{}, err
	}
	if ok, err := l.try(); ok || err != nil {
		return l.start, err
	}
	if l.wait == 0 || l.pastDeadline() {
		return time.Time{}, l.notAcquired(errs.ErrNotAcquired)
	}
	m.waiting()
	if err := l.subscribe(); err != nil {
		return time.Time{}, err
	}
	// Since Go 1.23 a stopped or reset timer never delivers a stale tick, so no draining is needed.
	l.timer = time.NewTimer(time.Hour)
	defer l.timer.Stop()
	for {
		d, last := l.next()
		if d > 0 {
			why, err := l.park(d)
			switch {
			case err != nil:
				return time.Time{}, err
			case why == granted:
				return l.start, nil
			case why == subscribing:
				continue // the other channel is not subscribed yet: the try after it covers both
			}
			last = last && why == timedOut
		}
		if ok, err := l.try(); ok || err != nil {
			return l.start, err
		}
		if last || l.pastDeadline() {
			return time.Time{}, l.notAcquired(errs.ErrNotAcquired)
		}
	}
}

// loop is one wait: its bounds, its places on the channels, and what its last try learnt.
type loop struct {
	c     *Waiter
	ctx   context.Context
	w     Wait
	wait  time.Duration
	tries tries
	ws    waiters
	timer *time.Timer
	// deadline is the wait bound, and stop when a try sent at it is given up (zero: none).
	deadline, stop time.Time
	start          time.Time     // when the last try started
	retryIn        time.Duration // what it said of when to try again
	// unacked is why the last try gave back what it acquired: too few replicas acknowledged it in
	// time. A replica that lags is waited out within the bound, which alone ends the wait with it.
	unacked error
	pause   time.Duration // between tries that the replicas did not acknowledge
}

func (c *Waiter) newLoop(ctx context.Context, wait time.Duration, w Wait) *loop {
	l := &loop{c: c, ctx: ctx, w: w, wait: wait}
	if wait > 0 {
		l.deadline = time.Now().Add(wait)
		l.stop = l.deadline.Add(send.Overtime)
	}
	// Tries run detached from ctx's cancellation, and are sent again after connection failures only
	// within the wait's bounds: ctx's deadline, or the end of the wait and Overtime after it (a
	// single try gets Overtime). Refused, they are sent again within the same bounds, but a single
	// try within RetryBound: Redis answers a refusal at once, and a slot may move for longer than
	// Overtime. What they give back is sent within bounds of its own.
	l.tries = tries{undo: hold.Detach(ctx), within: send.Bounds{Lost: l.stop, Refused: l.stop}}
	if wait == 0 {
		l.tries.within.Lost = time.Now().Add(send.Overtime)
	}
	if dl, ok := ctx.Deadline(); ok {
		l.tries.within.Lost, l.tries.within.Refused = earliest(l.tries.within.Lost, dl), earliest(l.tries.within.Refused, dl)
	}
	return l
}

// subscribeEarly listens before the first try when the wait's channels are subscribed already: a
// waiter that registers while they are needs one try only, since any release after it is announced
// to it. Otherwise subscribe, after a failed try, listens and the next try covers a release between.
func (l *loop) subscribeEarly() error {
	n, w := l.c.notifier, l.w
	if l.wait == 0 || !n.Subscribed(w.Channel) || (w.Wake != "" && !n.Subscribed(w.Wake)) {
		return nil
	}
	if err := l.ws.add(l.c, w); err != nil {
		return l.c.s.ClosedOr(err)
	}
	return nil
}

// subscribe listens on the wait's channels after its first try failed, once the wait's List listed
// the Client among the object's, unless it listened already.
func (l *loop) subscribe() error {
	if len(l.ws) > 0 {
		if l.ws.ready() {
			l.ws.settle()
		}
		return nil
	}
	if l.w.List != nil {
		ctx, cancel := l.ctx, context.CancelFunc(func() {})
		if !l.stop.IsZero() {
			ctx, cancel = context.WithDeadline(l.ctx, l.stop)
		}
		err := l.w.List.List(ctx)
		cancel()
		if err != nil {
			return err
		}
	}
	if err := l.ws.add(l.c, l.w); err != nil {
		return l.c.s.ClosedOr(err)
	}
	return nil
}

// next returns how long to park before the next try: until the holder's lease may end as the last
// try said, at most the recheck interval, and no later than the wait bound (last: the try after it
// is the bound's).
func (l *loop) next() (d time.Duration, last bool) {
	d = l.retryIn
	// Without a channel no notification can be lost: the try's own answer is the wait.
	if d <= 0 || (d > l.c.recheck && l.w.Channel != "") {
		d = l.c.recheck
	}
	if !l.deadline.IsZero() {
		if left := time.Until(l.deadline); left <= d {
			return left, true
		}
	}
	return d, false
}

// woken says why park returned.
type woken int

const (
	timedOut    woken = iota // its time passed: the holder's lease, the recheck, or the wait's bound
	released                 // a release was announced, or the channels were all subscribed
	subscribing              // one channel was subscribed, another is not yet
	granted                  // a hand-over was taken: the object is acquired
)

// park waits for d at most for a reason to try again; ctx's end and Close end the wait.
func (l *loop) park(d time.Duration) (woken, error) {
	l.timer.Reset(d)
	defer l.timer.Stop()
	select {
	case <-l.ws.readyCh(0):
		return l.subscribed(0), nil
	case <-l.ws.readyCh(1):
		return l.subscribed(1), nil
	case <-l.ws.signal(0):
		return l.signalled(0), nil
	case <-l.ws.signal(1):
		return l.signalled(1), nil
	case <-l.timer.C:
		return timedOut, nil
	case <-l.ctx.Done():
		return timedOut, l.notAcquired(context.Cause(l.ctx))
	case <-l.c.s.Done():
		return timedOut, errs.ErrClosed
	}
}

// subscribed notes that channel i is subscribed.
func (l *loop) subscribed(i int) woken {
	l.ws.readied(i)
	if l.ws.subscribing() {
		return subscribing
	}
	return released
}

// signalled reads a message on channel i: a hand-over, on the wait's last place (the wake channel,
// or the only one), made after the try that started at l.start, is taken; a late one goes to a try.
func (l *loop) signalled(i int) woken {
	if i == len(l.ws)-1 && l.ws.granted(l.w.Grants, !l.w.late(l.start)) {
		return granted
	}
	return released
}

// try sends one try, and reports whether it acquired; a try Redis refused for as long as it was
// sent, one learnt of too late, or one the replicas lag behind, is as one that did not.
func (l *loop) try() (bool, error) {
	l.start = time.Now()
	ok, retryIn, err := l.c.try(l.ctx, l.stop, l.tries, l.w)
	l.retryIn = retryIn
	if err != nil && send.IsConnectionError(err) {
		err = l.c.s.ClosedOr(err) // Close ended the connection under the try
	}
	switch {
	case send.IsRefused(err) && l.wait != 0 && l.ctx.Err() == nil:
		// Redis refused the try for as long as it was sent (a slot moving for longer than
		// RetryBound): it did not run, and the wait goes on within its own bounds.
		l.retryIn = send.ResendBackoff
		return false, nil
	case ok && err == nil && l.w.late(l.start):
		l.w.Tries.Undo(l.tries.undo, true)
		l.retryIn = time.Millisecond // try again at once
		return false, nil
	}
	l.unacked = nil
	if l.wait != 0 && err != nil && send.Lagging(err) {
		if l.w.Again != nil {
			l.w.Again.Again()
		}
		l.pause = min(max(2*l.pause, 10*time.Millisecond), send.ResendBackoff)
		l.unacked, l.retryIn = err, l.pause
		return false, nil
	}
	return ok, err
}

// pastDeadline reports whether the wait bound has passed.
func (l *loop) pastDeadline() bool { return !l.deadline.IsZero() && !time.Now().Before(l.deadline) }

// notAcquired is why the wait ended without the object: cause (its bound, ctx's end), or a replica
// that still lags.
func (l *loop) notAcquired(cause error) error {
	if l.unacked == nil {
		return cause
	}
	if cause == errs.ErrNotAcquired {
		return l.unacked
	}
	return fmt.Errorf("%w (%w)", l.unacked, cause)
}

// live returns why nothing may be started now: ctx has ended or the client is closed.
func (c *Waiter) live(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return c.s.Closed()
}
