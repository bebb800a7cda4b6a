package send

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
func (c *Sender) DeleteLater(key string, fields ...string) {
	if len(fields) == 0 {
		c.later(key, "", false)
	}
	for _, f := range fields {
		c.later(key, f, true)
	}
}

func (c *Sender) later(key, field string, isField bool) {
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

func (c *Sender) sendDeletes() {
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
			c.sendDeleteBatch(ctx, batch, keys)
			cancel()
		}
		if closing {
			return
		}
	}
}

// sendDeleteBatch deletes the fields of batch and the keys, and sends again, until ctx ends, the
// deletes whose connection failed: a delete is idempotent, and one lost with its connection (a
// connection that a lost call's failure took down with it) would leave its key for its whole TTL.
func (c *Sender) sendDeleteBatch(ctx context.Context, batch map[string][]string, keys []string) {
	type del struct {
		key    string
		fields []string
	}
	dels := make([]del, 0, len(batch)+len(keys))
	for key, fields := range batch {
		dels = append(dels, del{key, fields})
	}
	for _, key := range keys { // one command per key: a cluster routes each by its slot
		dels = append(dels, del{key: key})
	}
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, ResendBackoff) {
		cmds := make(rueidis.Commands, len(dels))
		for i, d := range dels {
			if len(d.fields) > 0 {
				cmds[i] = c.rdb.B().Hdel().Key(d.key).Field(d.fields...).Build()
			} else {
				cmds[i] = c.rdb.B().Del().Key(d.key).Build()
			}
		}
		var failed []del
		for i, res := range c.rdb.DoMulti(ctx, cmds...) {
			if IsConnectionError(res.Error()) {
				failed = append(failed, dels[i])
			}
		}
		if dels = failed; len(dels) == 0 || c.isClosed() {
			return
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.done: // the last batch goes out once, within flushBound
			t.Stop()
			return
		}
	}
}

// closeDeletes waits for the last batch, which the closing of c.done sends.
func (c *Sender) closeDeletes() {
	c.deletes.mu.Lock() // no DeleteLater starts the goroutine after this: c.closed is set
	c.deletes.mu.Unlock()
	c.deletes.wg.Wait()
}
