package core

import (
	"github.com/redisync/redisync/internal/hold"
)

// CountedDown reports that the countdown latch name was counted down.
func (c *Client) CountedDown(kind, name string) {
	c.ev.Emit(hold.Event{Kind: hold.EventCountedDown, Primitive: kind, Name: name})
}

// reconnected is the notifier's report that it subscribed channels again after losing their
// subscription (its connection dropped, or they moved with a slot or a failover); their waiters try
// again, since releases may have been missed meanwhile, and the holds are checked, since the server
// may have lost them (a Client of Wrap hears of no other reconnect).
func (c *Client) reconnected(channels int) {
	c.holds.Check()
	c.ev.Log().Info("redisync: notifier subscribed again after losing its subscriptions; waiters try again",
		"channels", channels)
	c.ev.Emit(hold.Event{Kind: hold.EventReconnected, Channels: channels})
}
