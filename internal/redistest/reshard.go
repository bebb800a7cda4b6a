package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SlotMove says how MoveSlot moves a slot between masters.
type SlotMove struct {
	// PerKey moves the keys one MIGRATE per key, as redis-cli --cluster
	// reshard does with --cluster-pipeline 1; otherwise one MIGRATE takes
	// every key the slot holds.
	PerKey bool
	// Pause waits this long after marking the slot migrating and after each
	// MIGRATE: the slot stays in migration as long as a slow move or one of
	// many keys keeps it.
	Pause time.Duration
}

// MoveSlot moves slot from the master that serves it to the master to, the
// way an operator does (the RELIABILITY recipe): CLUSTER SETSLOT IMPORTING on
// to and MIGRATING on the owner, MIGRATE of the keys until the owner holds
// none, then CLUSTER SETSLOT NODE on to, on the owner and on every other
// master. While it runs, commands on the slot meet ASK and TRYAGAIN. Moving
// a slot to the master that serves it does nothing. A move that failed part
// of the way (a node stalled) is finished by calling MoveSlot again with the
// same target.
func (c *Cluster) MoveSlot(ctx context.Context, slot int, to *Server, how SlotMove) error {
	var from *Server
	toOwns := false
	for _, m := range c.Masters {
		owns, err := m.serves(ctx, slot)
		if err != nil {
			return err
		}
		switch {
		case m == to:
			toOwns = owns
		case owns:
			from = m
		}
	}
	if from == nil {
		return nil // to serves it, and every master knows
	}
	toID, err := to.DoContext(ctx, "CLUSTER", "MYID")
	if err != nil {
		return to.errorf("CLUSTER MYID: %v", err)
	}
	s := strconv.Itoa(slot)
	// When to serves the slot already, an earlier move stopped after it had moved every key.
	if !toOwns {
		if err := c.migrate(ctx, slot, from, to, toID, how); err != nil {
			return err
		}
	}
	// The new owner first, so that it serves the slot before the old one redirects there; then
	// the old owner and the other masters, which would also learn it from the cluster bus.
	order := []*Server{to, from}
	for _, m := range c.Masters {
		if m != to && m != from {
			order = append(order, m)
		}
	}
	for _, m := range order {
		if _, err := m.DoContext(ctx, "CLUSTER", "SETSLOT", s, "NODE", toID); err != nil {
			return m.errorf("CLUSTER SETSLOT %s NODE: %v", s, err)
		}
	}
	return nil
}

// migrate marks slot as moving from from to to, and moves every key it holds.
func (c *Cluster) migrate(ctx context.Context, slot int, from, to *Server, toID string, how SlotMove) error {
	fromID, err := from.DoContext(ctx, "CLUSTER", "MYID")
	if err != nil {
		return from.errorf("CLUSTER MYID: %v", err)
	}
	s := strconv.Itoa(slot)
	if _, err := to.DoContext(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", fromID); err != nil {
		return to.errorf("CLUSTER SETSLOT %s IMPORTING: %v", s, err)
	}
	if _, err := from.DoContext(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", toID); err != nil {
		return from.errorf("CLUSTER SETSLOT %s MIGRATING: %v", s, err)
	}
	pause := func() error {
		if how.Pause <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(how.Pause):
			return nil
		}
	}
	if err := pause(); err != nil {
		return err
	}
	for {
		out, err := from.DoContext(ctx, "CLUSTER", "GETKEYSINSLOT", s, "100")
		if err != nil {
			return from.errorf("CLUSTER GETKEYSINSLOT %s: %v", s, err)
		}
		if out == "" {
			return nil
		}
		keys := strings.Split(out, "\n")
		batches := [][]string{keys}
		if how.PerKey {
			batches = batches[:0]
			for _, k := range keys {
				batches = append(batches, []string{k})
			}
		}
		for _, b := range batches {
			// REPLACE: a MIGRATE that failed may have left a copy at to, which the owner's
			// replaces. A key that went meanwhile answers NOKEY, which is fine.
			args := append([]string{"MIGRATE", "127.0.0.1", strconv.Itoa(to.Port), "", "0", "5000", "REPLACE", "KEYS"}, b...)
			if _, err := from.DoContext(ctx, args...); err != nil {
				return from.errorf("MIGRATE of %d keys of slot %s: %v", len(b), s, err)
			}
			if err := pause(); err != nil {
				return err
			}
		}
	}
}

// SlotOwner returns the master that serves slot; while a move is under way, the one it leaves.
func (c *Cluster) SlotOwner(ctx context.Context, slot int) (*Server, error) {
	var owner *Server
	for _, m := range c.Masters {
		owns, err := m.serves(ctx, slot)
		if err != nil {
			return nil, err
		}
		if owns && (owner == nil || m.migrating(ctx, slot)) {
			owner = m
		}
	}
	if owner == nil {
		return nil, errors.New("redistest: no master serves slot " + strconv.Itoa(slot))
	}
	return owner, nil
}

// Migrating reports whether a master has slot marked as leaving it: MoveSlot is under way, and
// scripts on the slot meet TRYAGAIN.
func (c *Cluster) Migrating(ctx context.Context, slot int) bool {
	for _, m := range c.Masters {
		if m.migrating(ctx, slot) {
			return true
		}
	}
	return false
}

// serves reports whether the node says that it serves slot.
func (s *Server) serves(ctx context.Context, slot int) (bool, error) {
	line, err := s.myself(ctx)
	if err != nil {
		return false, err
	}
	f := strings.Fields(line)
	if len(f) < 8 || !strings.Contains(f[2], "master") {
		return false, nil
	}
	for _, r := range f[8:] {
		if strings.HasPrefix(r, "[") {
			continue // a slot in migration, served by its owner as well
		}
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if !isRange {
			b, err2 = a, nil
		}
		if err1 == nil && err2 == nil && a <= slot && slot <= b {
			return true, nil
		}
	}
	return false, nil
}

// migrating reports whether the node has slot marked as leaving it.
func (s *Server) migrating(ctx context.Context, slot int) bool {
	line, err := s.myself(ctx)
	return err == nil && strings.Contains(line, "["+strconv.Itoa(slot)+"->-")
}

// myself returns the node's own line of CLUSTER NODES.
func (s *Server) myself(ctx context.Context) (string, error) {
	nodes, err := s.DoContext(ctx, "CLUSTER", "NODES")
	if err != nil {
		return "", s.errorf("CLUSTER NODES: %v", err)
	}
	for _, line := range strings.Split(nodes, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && strings.Contains(f[2], "myself") {
			return line, nil
		}
	}
	return "", s.errorf("CLUSTER NODES has no line for myself")
}

// String names a slot move for test logs.
func (m SlotMove) String() string {
	how := "one MIGRATE of all keys"
	if m.PerKey {
		how = "key by key"
	}
	if m.Pause > 0 {
		how += fmt.Sprintf(", %v between steps", m.Pause)
	}
	return how
}
