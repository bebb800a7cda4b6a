package core

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

// Waiting: tries, release notifications and hand-overs.

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
	// lease, when not 0, is how long an acquisition holds from when its try was sent: one learnt of
	// so late (a reply or a hand-over delayed by a stalled server) that half of it has gone is given
	// back and tried again, since it could end before the watchdog's first renewal.
	lease time.Duration
}

// Tries makes the tries of one acquisition, and gives back what a try acquired that must not be
// kept: the caller's ctx ended while it ran, or the replicas did not acknowledge it (Try reports ok
// with the error). sure is false when the try's answer never came, so that Redis may or may not have
// acquired: Undo then gives back only what it finds the try took.
type Tries interface {
	Try(ctx context.Context, within send.Bounds) (ok bool, retryIn time.Duration, err error)
	Undo(ctx context.Context, sure bool)
}

// again is implemented by Tries whose try after a give-back must be a call of its own (a new request
// id): the give-back may have left the memo of the one before saying what it did.
type again interface{ Again() }

// Grants takes hand-overs: a release that gives the object to a waiter and tells it with a message
// addressed to its Tag.
type Grants interface {
	// Tag names the waiter; Acquire asks for it when it starts to listen, before the try that must
	// leave a record under that name.
	Tag() string
	// Claim turns the message's payload into the acquisition. False: not a grant that stands
	// (malformed, or made before the waiter's last try was answered: that try took it or found it
	// void, whatever order the connections delivered in), so keep waiting.
	Claim(payload string) bool
	// Stray gets the addressed messages of the wake channel that no waiter of this client takes: the
	// object was handed to a waiter that has left, and must be given back.
	Stray(tag, payload string)
}

// GrantFor reads a hand-over's payload, "<token> <score>": the fencing token it carries, and whether
// it was made after the try that gave the waiter's record score (a grant made before that try was
// answered was taken by it, or found void by it, however late its message came).
func GrantFor(payload string, score int64) (token int64, ok bool) {
	t, s, ok := strings.Cut(payload, " ")
	if !ok {
		return 0, false
	}
	token, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err != nil || n != score {
		return 0, false
	}
	return token, true
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
// send.RetryBound and Config.StallBound): then it runs apart, and the wait returns at ctx's deadline, or
// send.Overtime after the wait bound (a try sent at the bound gets that long to be answered). Either way,
// when ctx has ended or the wait has been given up by the time a try acquires, Undo gives the
// acquisition back. A try is sent exactly once (see once.go): one whose answer never comes ends the
// wait with the connection's error, and Undo gives back whatever Redis may have acquired for it.

// Acquire tries w.Tries until a try succeeds, the wait bound passes (ErrNotAcquired), ctx ends, or
// the client is closed; kind and name say what for, in events. wait < 0 means no bound but ctx; wait
// == 0 means a single try. The wait bound counts from the call. It returns the start time of the
// successful try.
func (c *Client) Acquire(ctx context.Context, kind, name string, wait time.Duration, w Wait) (time.Time, error) {
	m := c.observe(kind, name, &w)
	start, err := c.acquire(ctx, wait, w, m)
	m.done(err)
	return start, err
}

// acquire is Acquire, measured by m.
func (c *Client) acquire(ctx context.Context, wait time.Duration, w Wait, m *acquiring) (time.Time, error) {
	if err := c.live(ctx); err != nil {
		return time.Time{}, err
	}
	var deadline, stop time.Time // the wait bound, and when a try sent at it is given up
	if wait > 0 {
		deadline = time.Now().Add(wait)
		stop = deadline.Add(send.Overtime)
	}
	// Tries run detached from ctx's cancellation, and are sent again after connection failures only
	// within the wait's bounds: ctx's deadline, or the end of the wait and send.Overtime after it (a
	// single try gets send.Overtime). Refused, they are sent again within the same bounds, but a single
	// try within send.RetryBound: Redis answers a refusal at once, and a slot may move for longer than
	// send.Overtime. What they give back is sent within bounds of its own.
	tries := tries{undo: hold.Detach(ctx), within: send.Bounds{Lost: stop, Refused: stop}}
	if wait == 0 {
		tries.within.Lost = time.Now().Add(send.Overtime)
	}
	if dl, ok := ctx.Deadline(); ok {
		tries.within.Lost, tries.within.Refused = earliest(tries.within.Lost, dl), earliest(tries.within.Refused, dl)
	}
	// A try that acquired what too few replicas acknowledged in time has given it back; a replica
	// that lags is waited out within the bound, which alone ends the wait with ErrNotReplicated.
	var unacked error
	pause := time.Duration(0)
	try := func() (bool, time.Duration, time.Time, error) {
		start := time.Now()
		ok, retryIn, err := c.try(ctx, stop, tries, w)
		if err != nil && send.IsConnectionError(err) && c.isClosed() {
			err = errs.ErrClosed // Close ended the connection under the try
		}
		if send.IsRefused(err) && wait != 0 && ctx.Err() == nil {
			// Redis refused the try for as long as it was sent (a slot moving for longer than
			// send.RetryBound): it did not run, and the wait goes on within its own bounds.
			return false, send.ResendBackoff, start, nil
		}
		if ok && err == nil && w.late(start) {
			w.Tries.Undo(tries.undo, true)
			return false, time.Millisecond, start, nil // try again at once
		}
		unacked = nil
		if wait != 0 && err != nil && send.Lagging(err) {
			if ag, ok := w.Tries.(again); ok {
				ag.Again()
			}
			pause = min(max(2*pause, 10*time.Millisecond), send.ResendBackoff)
			unacked = err
			return false, pause, start, nil
		}
		return ok, retryIn, start, err
	}
	// notAcquired is why the wait ended without the object: its bound, or a replica that still lags.
	notAcquired := func(cause error) error {
		if unacked == nil {
			return cause
		}
		if cause == errs.ErrNotAcquired {
			return unacked
		}
		return fmt.Errorf("%w (%w)", unacked, cause)
	}
	// A waiter that registers while its channels are subscribed needs one try only: any release
	// after that try is announced to it. Otherwise it subscribes after a failed try and tries again
	// once subscribed, to cover a release in between.
	var ws waiters
	if wait != 0 && c.notifier.Subscribed(w.Channel) && (w.Wake == "" || c.notifier.Subscribed(w.Wake)) {
		if err := ws.add(c, w); err != nil {
			return time.Time{}, c.closedOr(err)
		}
	}
	defer func() { ws.close() }() // ws grows below
	ok, retryIn, start, err := try()
	if ok || err != nil {
		return start, err
	}
	if wait == 0 || (!deadline.IsZero() && !time.Now().Before(deadline)) {
		return time.Time{}, notAcquired(errs.ErrNotAcquired)
	}
	m.waiting()
	if len(ws) == 0 {
		if ls, ok := w.Tries.(lister); ok {
			lctx, cancel := ctx, context.CancelFunc(func() {})
			if !stop.IsZero() {
				lctx, cancel = context.WithDeadline(ctx, stop)
			}
			err := ls.List(lctx)
			cancel()
			if err != nil {
				return time.Time{}, err
			}
		}
		if err := ws.add(c, w); err != nil {
			return time.Time{}, c.closedOr(err)
		}
	} else if ws.ready() {
		ws.settle()
	}
	// Since Go 1.23 a stopped or reset timer never delivers a stale tick, so no draining is needed.
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		d := retryIn
		// Without a channel no notification can be lost: the try's own answer is the wait.
		if d <= 0 || (d > c.cfg.Recheck && w.Channel != "") {
			d = c.cfg.Recheck
		}
		last := false
		if !deadline.IsZero() {
			if left := time.Until(deadline); left <= d {
				d, last = left, true
			}
		}
		if d > 0 {
			timer.Reset(d)
			readied := false
			select {
			case <-ws.readyCh(0):
				ws.readied(0)
				last, readied = false, true
			case <-ws.readyCh(1):
				ws.readied(1)
				last, readied = false, true
			case <-ws.signal(0):
				last = false
				if len(ws) == 1 && ws.granted(w.Grants, !w.late(start)) {
					return start, nil
				}
			case <-ws.signal(1):
				last = false
				// A hand-over came after the try that started at start; a late one goes to a try.
				if ws.granted(w.Grants, !w.late(start)) {
					return start, nil
				}
			case <-timer.C:
			case <-ctx.Done():
				return time.Time{}, notAcquired(context.Cause(ctx))
			case <-c.done:
				return time.Time{}, errs.ErrClosed
			}
			timer.Stop()
			if readied && ws.subscribing() {
				continue // the other channel is not subscribed yet: the try after it covers both
			}
		}
		ok, retryIn, start, err = try()
		if ok || err != nil {
			return start, err
		}
		if last || (!deadline.IsZero() && !time.Now().Before(deadline)) {
			return time.Time{}, notAcquired(errs.ErrNotAcquired)
		}
	}
}

// waiters are a wait's places on its channels: the release channel, and the wake channel if any.
type waiters []*waiter

type waiter struct {
	*pubsub.Waiter
	ready <-chan struct{} // nil once subscribed
}

func (ws *waiters) add(c *Client, w Wait) error {
	for i, ch := range [2]string{w.Channel, w.Wake} {
		if ch == "" {
			continue
		}
		tag, stray := "", (func(string, string))(nil)
		if w.Grants != nil && (i == 1 || w.Wake == "") {
			tag, stray = w.Grants.Tag(), w.Grants.Stray
		}
		pw, err := c.notifier.SubscribeTagged(ch, tag, w.Weight, w.Policy, stray)
		if err != nil {
			ws.close()
			return err
		}
		*ws = append(*ws, &waiter{Waiter: pw, ready: pw.Ready()})
	}
	return nil
}

func (ws waiters) close() {
	for _, w := range ws {
		w.Close()
	}
}

// ready reports whether every channel is subscribed now.
func (ws waiters) ready() bool {
	for _, w := range ws {
		select {
		case <-w.ready:
		default:
			return false
		}
	}
	return true
}

// settle marks every channel subscribed.
func (ws waiters) settle() {
	for _, w := range ws {
		w.ready = nil
	}
}

func (ws waiters) subscribing() bool {
	for _, w := range ws {
		if w.ready != nil {
			return true
		}
	}
	return false
}

func (ws waiters) readyCh(i int) <-chan struct{} {
	if i < len(ws) {
		return ws[i].ready
	}
	return nil
}

func (ws waiters) readied(i int) { ws[i].ready = nil }

// late reports whether an acquisition whose try started at start is learnt of too late to keep
// without checking: half its lease has gone.
func (w *Wait) late(start time.Time) bool {
	return w.lease > 0 && time.Since(start) >= w.lease/2
}

// granted reports whether a hand-over was addressed to the wait (on its last place: the wake channel,
// or the only one) since the last call, and, when take is set, whether Claim took it.
func (ws waiters) granted(g Grants, take bool) bool {
	if g == nil || len(ws) == 0 {
		return false
	}
	payload, ok := ws[len(ws)-1].Grant()
	return ok && take && g.Claim(payload)
}

func (ws waiters) signal(i int) <-chan struct{} {
	if i < len(ws) {
		return ws[i].C()
	}
	return nil
}

// try runs one attempt on tryCtx, which ignores cancellation. When the attempt could overrun ctx's
// deadline or stop (the end of a wait bound; zero for none) it runs on a goroutine of its own, and the
// caller stops waiting for it when ctx ends (its cause) or stop passes (ErrNotAcquired); the attempt
// then finishes on its own and anything it acquired is given back.
func (c *Client) try(ctx context.Context, stop time.Time, t tries, w Wait) (bool, time.Duration, error) {
	var r result
	if !c.mayOverrun(ctx, stop) {
		r.ok, r.retryIn, r.err = w.Tries.Try(t.undo, t.within)
	} else if r = tryApart(ctx, stop, t, w); r.late {
		if ctx.Err() != nil {
			return false, 0, context.Cause(ctx)
		}
		return false, 0, errs.ErrNotAcquired
	}
	// A try that acquired must not keep it when it reports an error (the replicas did not acknowledge
	// the write) or when the caller has gone; one whose answer never came may have acquired.
	switch {
	case r.ok && (r.err != nil || ctx.Err() != nil):
		w.Tries.Undo(t.undo, true)
		if r.err == nil {
			r.err = context.Cause(ctx)
		}
		return false, 0, r.err
	case !r.ok && send.IsConnectionError(r.err):
		w.Tries.Undo(t.undo, false)
	}
	return r.ok, r.retryIn, r.err
}

// tries are what a wait's tries run on: a ctx without the caller's cancellation, on which what they
// give back runs too, and the bounds within which they are sent again.
type tries struct {
	undo   context.Context
	within send.Bounds
}

// earliest returns the earlier of a and b, where zero is no time at all (never).
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// lister is implemented by Tries whose waiters must be known before they listen: List runs before
// the wait subscribes to its channels, and ctx bounds how long it may keep the wait. An error it
// returns (Redis refused the listing) ends the wait.
type lister interface {
	List(ctx context.Context) error
}

// apart is implemented by Tries whose calls must not overlap with the next call of their object:
// a try that runs apart may outlive Acquire, and the object's next call waits for apartEnd.
type apart interface {
	apartStart()
	apartEnd()
}

type result struct {
	ok      bool
	retryIn time.Duration
	err     error
	late    bool // ctx ended or stop passed first: the try goes on alone, and undo gives back what it acquires
}

// tryApart runs try on a goroutine of its own and waits for it until ctx ends or stop (if not zero)
// passes.
func tryApart(ctx context.Context, stop time.Time, t tries, w Wait) result {
	done := make(chan result, 1)
	ap, _ := w.Tries.(apart)
	if ap != nil {
		ap.apartStart()
	}
	go func() {
		var r result
		r.ok, r.retryIn, r.err = w.Tries.Try(t.undo, t.within)
		done <- r
	}()
	var expired <-chan time.Time
	if !stop.IsZero() {
		t := time.NewTimer(time.Until(stop))
		defer t.Stop()
		expired = t.C
	}
	select {
	case r := <-done:
		if ap != nil {
			ap.apartEnd()
		}
		return r
	case <-ctx.Done():
	case <-expired:
	}
	go func() {
		switch r := <-done; {
		case r.ok:
			w.Tries.Undo(t.undo, true)
		case send.IsConnectionError(r.err):
			w.Tries.Undo(t.undo, false)
		}
		if ap != nil {
			ap.apartEnd()
		}
	}()
	return result{late: true}
}

// mayOverrun reports whether a try could still be in flight at ctx's deadline or at stop: there is
// one, and the bound on a try (its sends again after connection failures, then the connection's own
// bound on the last of them) may come later, or is unknown.
func (c *Client) mayOverrun(ctx context.Context, stop time.Time) bool {
	dl, ok := ctx.Deadline()
	if !stop.IsZero() && (!ok || stop.Before(dl)) {
		dl, ok = stop, true
	}
	return ok && (c.cfg.StallBound <= 0 || time.Until(dl) <= send.RetryBound+c.cfg.StallBound)
}

// live returns why nothing may be started now: ctx has ended or the client is closed.
func (c *Client) live(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if c.isClosed() {
		return errs.ErrClosed
	}
	return nil
}

func (c *Client) closedOr(err error) error {
	if c.isClosed() {
		return errs.ErrClosed
	}
	return err
}

// retryIn turns a PTTL that a script reported for the current holder into an Attempt's retryIn. PTTL
// rounds down, so the waiter waits one millisecond more than reported, or it would often try just
// before the expiry and then wait a whole recheck interval; a key without expiry (-1) is unknown.
func retryIn(pttl int64) time.Duration {
	if pttl < 0 {
		return -1
	}
	return time.Duration(pttl+1) * time.Millisecond
}
