package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterTimeout bounds building a cluster: meeting, replication and slot
// agreement normally take one or two seconds on loopback.
const clusterTimeout = 20 * time.Second

// Cluster is a Redis Cluster built from fresh servers, so that tests see
// MOVED redirects, slot-bound keys and cluster failover for real.
type Cluster struct {
	// Addrs are the masters' addresses; give them all to a client's
	// InitAddress so it can start even when one master is down.
	Addrs []string
	// Masters[i] serves the i-th even share of the 16384 slots (at start:
	// after a failover the roles may have changed).
	Masters []*Server
	// Replicas[i] follows Masters[i/replicasPerMaster] at start; nil when
	// there are no replicas.
	Replicas []*Server
	// Proxies, in a cluster made by NewProxiedCluster, stand in front of
	// each node, in the order of Servers: every node announces its proxy's
	// port, so that clients find the proxies in CLUSTER SLOTS and SHARDS
	// and in MOVED and ASK redirects, and Addrs are the masters' proxies.
	// The nodes' own Addr still reaches them directly (for Do).
	Proxies []*Proxy
}

// clusterArgs makes a node fail over quickly (node timeout 1s) and start
// replication at once, so that failover tests run in seconds.
func clusterArgs(port int, dir string) ([]string, error) {
	args, _ := standaloneArgs(nil)(port, dir)
	return append(args,
		"--cluster-enabled", "yes",
		"--cluster-config-file", fmt.Sprintf("nodes-%d.conf", port),
		"--cluster-node-timeout", "1000",
		"--repl-diskless-sync-delay", "0",
	), nil
}

// NewCluster starts masters*(1+replicasPerMaster) nodes, splits the slots
// evenly across the masters, attaches the replicas and returns only when
// every node reports cluster_state:ok and all nodes agree on the same slot
// map and replication layout, so that a cluster client can be used at once.
// The caller must Close it.
func NewCluster(masters, replicasPerMaster int) (*Cluster, error) {
	return newCluster(masters, replicasPerMaster, false)
}

// NewProxiedCluster is NewCluster with a Proxy in front of every node, so
// that a test can cut any client connection at a chosen command.
func NewProxiedCluster(masters, replicasPerMaster int) (*Cluster, error) {
	return newCluster(masters, replicasPerMaster, true)
}

func newCluster(masters, replicasPerMaster int, proxied bool) (*Cluster, error) {
	if masters < 1 || replicasPerMaster < 0 || masters > 16384 {
		return nil, fmt.Errorf("redistest: NewCluster(%d, %d): need 1..16384 masters and >= 0 replicas", masters, replicasPerMaster)
	}
	n := masters * (1 + replicasPerMaster)
	var proxies []*Proxy
	if proxied {
		for range n {
			// The proxy's port must be known before its node starts; the
			// node's own port only after.
			p, err := NewProxy("")
			if err != nil {
				closeProxies(proxies)
				return nil, err
			}
			proxies = append(proxies, p)
		}
	}
	nodes, err := startMany(n, func(i int) spec {
		if !proxied {
			return spec{bus: true, argsFor: clusterArgs}
		}
		return spec{bus: true, argsFor: func(port int, dir string) ([]string, error) {
			args, err := clusterArgs(port, dir)
			return append(args,
				"--cluster-announce-port", strconv.Itoa(proxies[i].Port()),
				"--cluster-announce-bus-port", strconv.Itoa(port+10000),
			), err
		}}
	})
	if err != nil {
		closeProxies(proxies)
		return nil, err
	}
	for i, p := range proxies {
		p.setUpstream(nodes[i].Addr)
	}
	c := &Cluster{Masters: nodes[:masters], Proxies: proxies}
	if replicasPerMaster > 0 {
		c.Replicas = nodes[masters:]
	}
	for _, m := range c.Masters {
		c.Addrs = append(c.Addrs, c.announced(m))
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := c.build(ctx, replicasPerMaster); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// StartCluster gives a test a ready cluster that is stopped when the test
// ends.
func StartCluster(tb testing.TB, masters, replicasPerMaster int) *Cluster {
	tb.Helper()
	return startCluster(tb, NewCluster, masters, replicasPerMaster)
}

// StartProxiedCluster gives a test a ready cluster behind proxies (see
// NewProxiedCluster) that is stopped when the test ends.
func StartProxiedCluster(tb testing.TB, masters, replicasPerMaster int) *Cluster {
	tb.Helper()
	return startCluster(tb, NewProxiedCluster, masters, replicasPerMaster)
}

func startCluster(tb testing.TB, mk func(int, int) (*Cluster, error), masters, replicasPerMaster int) *Cluster {
	tb.Helper()
	Require(tb)
	c, err := mk(masters, replicasPerMaster)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Arm arms one fault on every node's proxy (see Arm): whichever node serves
// the command cuts it. It panics on a cluster without proxies.
func (c *Cluster) Arm(r Rule) *Fault {
	if c.Proxies == nil {
		panic("redistest: Arm on a cluster without proxies (see NewProxiedCluster)")
	}
	return Arm(r, c.Proxies...)
}

// announced is the address a node gives clients: its proxy's, if it has one.
func (c *Cluster) announced(s *Server) string {
	if i := slices.Index(c.Servers(), s); i >= 0 && c.Proxies != nil {
		return c.Proxies[i].Addr()
	}
	return s.Addr
}

func closeProxies(ps []*Proxy) error {
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// Servers lists every node, masters first, for tests that disturb or inspect
// all of them.
func (c *Cluster) Servers() []*Server {
	return append(slices.Clone(c.Masters), c.Replicas...)
}

// Close stops every node concurrently and removes their directories, and
// closes the proxies.
func (c *Cluster) Close() error {
	return errors.Join(closeAll(c.Servers()), closeProxies(c.Proxies))
}

// slotRange returns master i's share of the slots.
func slotRange(i, masters int) (lo, hi int) {
	return i * 16384 / masters, (i+1)*16384/masters - 1
}

// build does what redis-cli --cluster create does, without its fixed sleeps.
func (c *Cluster) build(ctx context.Context, replicasPerMaster int) error {
	nodes := c.Servers()
	ids := make([]string, len(nodes))
	for i, s := range nodes {
		id, err := s.DoContext(ctx, "CLUSTER", "MYID")
		if err != nil {
			return s.errorf("CLUSTER MYID: %v", err)
		}
		ids[i] = id
		// Distinct epochs up front avoid the epoch-collision dance later.
		if _, err := s.DoContext(ctx, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return s.errorf("CLUSTER SET-CONFIG-EPOCH: %v", err)
		}
	}
	for i, m := range c.Masters {
		lo, hi := slotRange(i, len(c.Masters))
		if _, err := m.DoContext(ctx, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return m.errorf("CLUSTER ADDSLOTSRANGE %d %d: %v", lo, hi, err)
		}
	}
	// A full mesh of MEETs: gossip alone would get there, but more slowly.
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if _, err := a.DoContext(ctx, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(b.Port)); err != nil {
				return a.errorf("CLUSTER MEET %s: %v", b.Addr, err)
			}
		}
	}
	for j, r := range c.Replicas {
		master := ids[j/replicasPerMaster]
		// The replica must have learnt the master's id through the handshake.
		err := poll(ctx, func() error {
			_, err := r.DoContext(ctx, "CLUSTER", "REPLICATE", master)
			return err
		})
		if err != nil {
			return r.errorf("CLUSTER REPLICATE %s: %v", master, err)
		}
	}
	want := c.expectedView(replicasPerMaster)
	for _, s := range nodes {
		err := poll(ctx, func() error { return c.nodeReady(ctx, s, want) })
		if err != nil {
			return s.errorf("cluster not ready within %v: %v", clusterTimeout, err)
		}
	}
	// Readiness is checked node by node; check once more that no node has
	// changed its mind (a late failure report) while the others were waited for.
	for _, s := range nodes {
		if err := c.nodeReady(ctx, s, want); err != nil {
			return s.errorf("cluster not stable: %v", err)
		}
	}
	return nil
}

// expectedView is the canonical CLUSTER NODES view (see canonicalView) of the
// layout build creates.
func (c *Cluster) expectedView(replicasPerMaster int) string {
	var lines []string
	for i, m := range c.Masters {
		lo, hi := slotRange(i, len(c.Masters))
		slots := fmt.Sprintf("%d-%d", lo, hi)
		if lo == hi {
			slots = strconv.Itoa(lo)
		}
		lines = append(lines, fmt.Sprintf("%s master - %s", c.announced(m), slots))
	}
	for j, r := range c.Replicas {
		lines = append(lines, fmt.Sprintf("%s slave %s", c.announced(r), c.announced(c.Masters[j/replicasPerMaster])))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// canonicalView reduces CLUSTER NODES output to what every node must agree
// on: one line per node with its address, role, master's address and slots,
// sorted. Flags that mean trouble (fail, fail?, handshake, noaddr) are kept
// so that such a view never matches the expected one.
func canonicalView(nodes string) string {
	addrOf := map[string]string{}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addrOf[f[0]] = addr
		rows = append(rows, f)
	}
	var lines []string
	for _, f := range rows {
		var role []string
		for _, flag := range strings.Split(f[2], ",") {
			if flag != "myself" && flag != "nofailover" {
				role = append(role, flag)
			}
		}
		parts := []string{addrOf[f[0]], strings.Join(role, ",")}
		if f[3] != "-" {
			master, ok := addrOf[f[3]]
			if !ok {
				master = "unknown:" + f[3]
			}
			parts = append(parts, master)
		} else if len(f) > 8 {
			parts = append(parts, "-")
		}
		parts = append(parts, f[8:]...)
		lines = append(lines, strings.Join(parts, " "))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// nodeReady checks one node: cluster_state:ok, the expected view of the
// whole cluster, and for a replica a live link to its master (so that reads
// from replicas and failovers work at once).
func (c *Cluster) nodeReady(ctx context.Context, s *Server, want string) error {
	info, err := s.DoContext(ctx, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return errors.New("cluster_state is not ok")
	}
	nodes, err := s.DoContext(ctx, "CLUSTER", "NODES")
	if err != nil {
		return err
	}
	if got := canonicalView(nodes); got != want {
		return fmt.Errorf("view differs from the layout\n got:\n%s\nwant:\n%s", got, want)
	}
	if slices.Contains(c.Replicas, s) {
		repl, err := s.DoContext(ctx, "INFO", "replication")
		if err != nil {
			return err
		}
		if !strings.Contains(repl, "master_link_status:up") {
			return errors.New("replica's link to its master is not up")
		}
	}
	return nil
}

// poll retries fn every 20ms until it succeeds or ctx ends. It then returns
// the last error fn gave before ctx ended, which says why it was not ready
// rather than merely that time ran out.
func poll(ctx context.Context, fn func() error) error {
	var last error
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(20 * time.Millisecond):
		}
	}
}
