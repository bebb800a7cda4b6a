package core

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// deletes sends the deletes that nobody waits for (a taken hand-over's grant, a release's latch),
// in batches, from one goroutine per Client started on first use.
type deletes struct {
	mu      sync.Mutex
	pending map[string][]string // hash key -> fields
	keys    []string            // whole keys
	running bool
	kick    chan struct{}
	wg      sync.WaitGroup
}

// flushBound bounds the last batch, sent while the Client closes.
const flushBound = time.Second

// DeleteLater removes key soon, or only its hash fields when fields are given, without waiting for
// it: deletes queued while one batch is on its way go out together in the next. After Close it does
// nothing.
func (c *Client) DeleteLater(key string, fields ...string) {
	if len(fields) == 0 {
		c.later(key, "", false)
	}
	for _, f := range fields {
		c.later(key, f, true)
	}
}

func (c *Client) later(key, field string, isField bool) {
	d := &c.deletes
	d.mu.Lock()
	if c.isClosed() {
		d.mu.Unlock()
		return
	}
	if !isField {
		d.keys = append(d.keys, key)
	} else {
		if d.pending == nil {
			d.pending = make(map[string][]string)
		}
		d.pending[key] = append(d.pending[key], field)
	}
	if !d.running {
		d.running = true
		d.kick = make(chan struct{}, 1)
		d.wg.Add(1)
		go c.sendDeletes()
	}
	kick := d.kick
	d.mu.Unlock()
	select {
	case kick <- struct{}{}:
	default:
	}
}

func (c *Client) sendDeletes() {
	d := &c.deletes
	defer d.wg.Done()
	for {
		closing := false
		select {
		case <-d.kick:
		case <-c.done:
			closing = true
		}
		d.mu.Lock()
		batch, keys := d.pending, d.keys
		d.pending, d.keys = nil, nil
		d.mu.Unlock()
		if len(batch)+len(keys) > 0 {
			bound := RetryBound
			if closing {
				bound = flushBound
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			cmds := make(rueidis.Commands, 0, len(batch)+len(keys))
			for key, fields := range batch {
				cmds = append(cmds, c.rdb.B().Hdel().Key(key).Field(fields...).Build())
			}
			for _, key := range keys { // one command per key: a cluster routes each by its slot
				cmds = append(cmds, c.rdb.B().Del().Key(key).Build())
			}
			c.rdb.DoMulti(ctx, cmds...)
			cancel()
		}
		if closing {
			return
		}
	}
}

// closeDeletes waits for the last batch, which the closing of c.done sends.
func (c *Client) closeDeletes() {
	c.deletes.mu.Lock() // no DeleteLater starts the goroutine after this: c.closed is set
	c.deletes.mu.Unlock()
	c.deletes.wg.Wait()
}
