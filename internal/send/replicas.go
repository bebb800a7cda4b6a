package send

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/lua"
)

// allReplicas as Config.ReplicaAck (-1, package redisync's AllReplicas) waits for every replica the master has; the acquisition stands
// when at least one of them acknowledges it (a master without replicas waits for none).
const allReplicas = -1

// firstReplica as Config.ReplicaAck, the default, waits for the first replica to acknowledge, when the
// master has any: never for the others, nor for the master's own AOF fsync. Sentinel and Redis
// Cluster promote the replica with the most of the master's stream, which then has the acquisition,
// and a lagging replica costs nothing while another keeps up (package redisync's doc says why).
const firstReplica = -2

// replicaInfoTTL is how long a master's replica count and AOF setting are trusted before INFO is
// asked again: an acquisition must not cost an INFO, yet a failover or a new replica must be seen.
const replicaInfoTTL = 5 * time.Second

// replicationError says that an acquiring write ran but was not acknowledged by enough replicas
// within the timeout: a failover could lose it. reply is what the script returned; the primitive
// that made the write must give it back (see SendAcquiring).
type replicationError struct {
	acked, want int64
	reply       rueidis.RedisResult
	err         error // the WAIT's own error, if it failed
}

// Error names ErrNotReplicated with the WAIT's error, or with how many replicas acknowledged.
func (e *replicationError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("%v: %v", errs.ErrNotReplicated, e.err)
	}
	return fmt.Sprintf("%v: %d of %d acknowledged", errs.ErrNotReplicated, e.acked, e.want)
}

// Unwrap makes errors.Is(err, ErrNotReplicated) true.
func (e *replicationError) Unwrap() error { return errs.ErrNotReplicated }

// NotReplicated returns what an acquiring send answers when acked of want replicas acknowledged
// its write in time: an error matching errs.ErrNotReplicated that Lagging reports.
func NotReplicated(acked, want int64) error { return &replicationError{acked: acked, want: want} }

// splitReplication separates an acquiring call's result into the script's reply and the replication
// error, if any.
func splitReplication(res rueidis.RedisResult) (rueidis.RedisResult, error) {
	if res.Error() == nil {
		return res, nil
	}
	var re *replicationError
	if errors.As(res.Error(), &re) && re.reply.Error() == nil {
		return re.reply, re
	}
	return res, nil
}

// replicaCache remembers, per master (per slot on a cluster), how many replicas it has and whether
// it writes an AOF, so that INFO is asked once per replicaInfoTTL rather than once per lock.
type replicaCache struct {
	mu         sync.Mutex
	m          map[uint16]replicaInfo
	refreshing map[uint16]bool
}

type replicaInfo struct {
	replicas int64
	waitAOF  bool // AOF on and the server knows WAITAOF (7.2+)
	at       time.Time
}

// get returns what is known of slot's master. Only the first call for a master waits for INFO; once
// known, a stale entry is returned as it is while one INFO refreshes it in the background, so that an
// acquisition never waits for it again.
func (rc *replicaCache) get(ctx context.Context, rdb rueidis.Client, slot uint16, key string) (replicaInfo, error) {
	rc.mu.Lock()
	ri, ok := rc.m[slot]
	stale := ok && time.Since(ri.at) >= replicaInfoTTL && !rc.refreshing[slot]
	if stale {
		if rc.refreshing == nil {
			rc.refreshing = make(map[uint16]bool)
		}
		rc.refreshing[slot] = true
	}
	rc.mu.Unlock()
	if stale {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), RetryBound)
			defer cancel()
			rc.ask(ctx, rdb, slot, key)
			rc.mu.Lock()
			delete(rc.refreshing, slot)
			rc.mu.Unlock()
		}()
	}
	if ok {
		return ri, nil
	}
	return rc.ask(ctx, rdb, slot, key)
}

func (rc *replicaCache) ask(ctx context.Context, rdb rueidis.Client, slot uint16, key string) (replicaInfo, error) {
	cmd := rdb.B().Info().Build()
	if key != "" {
		cmd = cmd.SetSlot(key) // the master of the key's slot on a cluster
	}
	text, err := rdb.Do(ctx, cmd).ToString()
	if err != nil {
		return replicaInfo{}, err
	}
	ri := parseReplicaInfo(text)
	rc.mu.Lock()
	if rc.m == nil {
		rc.m = make(map[uint16]replicaInfo)
	}
	rc.m[slot] = ri
	rc.mu.Unlock()
	return ri, nil
}

// peek returns what is known of slot's master, without asking.
func (rc *replicaCache) peek(slot uint16) (replicaInfo, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ri, ok := rc.m[slot]
	return ri, ok
}

// forget drops what is known of slot's master, after a WAIT that fell short (a replica gone, a
// failover): the next acquisition asks again.
func (rc *replicaCache) forget(slot uint16) {
	rc.mu.Lock()
	delete(rc.m, slot)
	rc.mu.Unlock()
}

func parseReplicaInfo(info string) replicaInfo {
	ri := replicaInfo{at: time.Now()}
	var aof bool
	var major, minor int
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "connected_slaves":
			ri.replicas, _ = strconv.ParseInt(v, 10, 64)
		case "aof_enabled":
			aof = v == "1"
		case "redis_version":
			parts := strings.SplitN(v, ".", 3)
			if len(parts) >= 2 {
				major, _ = strconv.Atoi(parts[0])
				minor, _ = strconv.Atoi(parts[1])
			}
		}
	}
	ri.waitAOF = aof && (major > 7 || major == 7 && minor >= 2)
	return ri
}

// runAcked runs s and then, on the same connection and in the same round trip, WAIT for the
// replicas (and WAITAOF for the master's own fsync when it writes an AOF). WAIT counts only the
// writes of the connection it is sent on, which is why the two go in one DoMulti: rueidis sends a
// DoMulti that contains a blocking command on one dedicated connection, in order.
func (c *Sender) runAcked(ctx context.Context, b Bounds, s *lua.Script, keys, args []string) rueidis.RedisResult {
	var key string
	var slot uint16
	if len(keys) > 0 {
		key = keys[0]
		if c.rdb.Mode() == rueidis.ClientModeCluster {
			slot = Slot(key)
		}
	}
	ri, err := c.replicas.get(ctx, c.rdb, slot, key)
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	want, need := int64(c.ack), int64(c.ack)
	switch c.ack {
	case allReplicas:
		want, need = ri.replicas, min(ri.replicas, 1)
	case firstReplica:
		want, need, ri.waitAOF = min(ri.replicas, 1), min(ri.replicas, 1), false
	}
	if want == 0 && !ri.waitAOF {
		return s.Exec(ctx, c.rdb, keys, args) // nothing to wait for: a master without replicas
	}
	// Within a try's bound (package waiting), WAIT gives up in time for its answer to come back before it:
	// the caller learns that the replicas lag, and what was acquired is given back before it returns.
	timeout := c.ackTimeout
	if !b.Refused.IsZero() {
		timeout = min(timeout, time.Until(b.Refused)-Overtime/2)
	}
	ms := max(timeout.Milliseconds(), 1)
	cmds := rueidis.Commands{s.EvalCommand(c.rdb, keys, args)}
	if want > 0 {
		cmds = append(cmds, withSlot(c.rdb.B().Wait().Numreplicas(want).Timeout(ms).Build(), key))
	}
	if ri.waitAOF {
		cmds = append(cmds, withSlot(c.rdb.B().Waitaof().Numlocal(1).Numreplicas(0).Timeout(ms).Build(), key))
	}
	res := c.rdb.DoMulti(ctx, cmds...)
	if res[0].Error() != nil {
		return res[0] // the script failed: it wrote nothing to acknowledge
	}
	if acked, err := acknowledged(res[1:], want > 0, need, ri.waitAOF); err != nil || acked < need {
		c.replicas.forget(slot)
		return rueidis.NewErrorResult(&replicationError{acked: acked, want: need, reply: res[0], err: err})
	}
	return res[0]
}

// acknowledged reads the answers of WAIT (when waited) and WAITAOF (aof): how many replicas
// acknowledged the write, or need when WAIT was not sent, and an error when either failed or the
// master did not fsync its AOF in time.
func acknowledged(res []rueidis.RedisResult, waited bool, need int64, aof bool) (int64, error) {
	acked := need
	if waited {
		var err error
		if acked, err = res[0].AsInt64(); err != nil || acked < need {
			return acked, err
		}
		res = res[1:]
	}
	if aof {
		local, err := res[0].AsIntSlice()
		if err == nil && (len(local) == 0 || local[0] < 1) {
			err = errors.New("the master did not fsync its AOF in time")
		}
		if err != nil {
			return 0, err
		}
	}
	return acked, nil
}

// AcksReplicas reports whether an acquisition of key waits for replicas: a release must not hand key
// to a waiter then, since only the waiter's own try waits for the replicas. It never waits: with
// allReplicas it answers by what the acquisition's first try learnt of the master, and true when
// nothing is known (that try failed).
func (c *Sender) AcksReplicas(key string) bool {
	switch c.ack {
	case 0:
		return false
	case allReplicas, firstReplica:
		var slot uint16
		if c.rdb.Mode() == rueidis.ClientModeCluster {
			slot = Slot(key)
		}
		ri, ok := c.replicas.peek(slot)
		return !ok || ri.replicas > 0 || (ri.waitAOF && c.ack == allReplicas)
	}
	return true
}

// Lagging reports whether err says that a try acquired what too few replicas acknowledged within
// the timeout (and was given back): they may catch up, so a wait goes on. A WAIT that failed
// (NOPERM, a connection that broke) is an answer like any other error.
func Lagging(err error) bool {
	var re *replicationError
	return errors.As(err, &re) && re.err == nil
}

func withSlot(cmd rueidis.Completed, key string) rueidis.Completed {
	if key == "" {
		return cmd
	}
	return cmd.SetSlot(key)
}
