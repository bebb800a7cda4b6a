package pubsub

// OnReconnect sets f to hear, on the notifier's goroutine, each time channels whose subscription was
// lost with waiters on them (the connection dropped, or the subscriptions had to move to another node:
// a cluster slot moved, a master failed over) are subscribed again: channels is how many. Their
// waiters have been woken to try again, since releases may have been missed. f must not block. It
// replaces any f set before; nil stops the reports.
func (n *Notifier) OnReconnect(f func(channels int)) {
	if f == nil {
		n.onReconnect.Store(nil)
		return
	}
	n.onReconnect.Store(&f)
}

func (n *Notifier) reconnected(channels int) {
	if channels == 0 {
		return
	}
	if f := n.onReconnect.Load(); f != nil {
		(*f)(channels)
	}
}
