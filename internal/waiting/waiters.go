package waiting

import (
	"time"

	"github.com/redisync/redisync/pubsub"
)

// waiters are a wait's places on its channels: the release channel, and the wake channel if any.
type waiters []*waiter

type waiter struct {
	*pubsub.Waiter
	ready <-chan struct{} // nil once subscribed
}

func (ws *waiters) add(c *Waiter, w Wait) error {
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
	return w.Lease > 0 && time.Since(start) >= w.Lease/2
}

// granted reports whether a hand-over was addressed to the wait (on its last place: the wake channel,
// or the only one) since the last call, and, when take is set, whether Claim took it.
func (ws waiters) granted(g Grants, take bool) bool {
	if g == nil || len(ws) == 0 {
		return false
	}
	payload, ok := ws[len(ws)-1].Grant()
	if !ok || !take {
		return false
	}
	token, score, ok := grantOf(payload)
	return ok && g.Claim(token, score)
}

func (ws waiters) signal(i int) <-chan struct{} {
	if i < len(ws) {
		return ws[i].C()
	}
	return nil
}
