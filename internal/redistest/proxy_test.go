package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// incr is a script that writes: whether it ran shows in its key.
const incrSrc = `return redis.call('incr', KEYS[1])`

var incr = rueidis.NewLuaScript(incrSrc)

func proxied(t *testing.T) (*Server, *Proxy, rueidis.Client) {
	t.Helper()
	s := Start(t)
	p := StartProxy(t, s.Addr)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return s, p, c
}

func fired(t *testing.T, f *Fault) {
	t.Helper()
	if !f.Wait(10 * time.Second) {
		t.Fatalf("the fault did not fire (%d matches seen)", f.Seen())
	}
}

// Each mode against a real server: a lost reply leaves the write applied, a lost request leaves
// nothing; the client sees a network error either way, and the proxy is transparent afterwards. The
// first send is an EVALSHA that the server answers NOSCRIPT: the fault waits for the EVAL after it.
func TestProxyCuts(t *testing.T) {
	for _, tc := range []struct {
		cut  Cut
		want string // the key after the faulted call
	}{{LoseReply, "1"}, {LoseRequest, ""}} {
		t.Run(tc.cut.String(), func(t *testing.T) {
			s, p, c := proxied(t)
			ctx := context.Background()
			f := p.Arm(Rule{Cut: tc.cut, Key: "k"})
			err := incr.Exec(ctx, c, []string{"k"}, nil).Error()
			if _, redis := rueidis.IsRedisErr(err); err == nil || redis {
				t.Fatalf("faulted call: %v, want a network error", err)
			}
			fired(t, f)
			// A lost request is the first send, EVALSHA; a lost reply must be one that ran, the EVAL.
			want := map[Cut]string{LoseReply: "EVAL", LoseRequest: "EVALSHA"}[tc.cut]
			if got := f.Command(); len(got) < 4 || got[0] != want || got[3] != "k" {
				t.Fatalf("cut %q, want the %s of k", got, want)
			}
			mustDo(t, s, tc.want, "GET", "k")
			n, err := incr.Exec(ctx, c, []string{"k"}, nil).AsInt64()
			if err != nil || n != int64(len(tc.want)+1) {
				t.Fatalf("call after the fault: %d, %v", n, err)
			}
			if p.Cuts() != 1 {
				t.Fatalf("Cuts %d, want 1", p.Cuts())
			}
		})
	}
}

// A delayed request is lost as LoseRequest loses it, and runs on the server when delivered, once.
func TestProxyDelay(t *testing.T) {
	s, p, c := proxied(t)
	ctx := context.Background()
	f := p.Arm(Rule{Cut: Delay, Commands: []string{"INCR"}, Key: "k"})
	err := c.Do(ctx, c.B().Incr().Key("k").Build()).Error()
	if _, redis := rueidis.IsRedisErr(err); err == nil || redis {
		t.Fatalf("delayed call: %v, want a network error", err)
	}
	fired(t, f)
	mustDo(t, s, "", "GET", "k")
	if n, err := c.Do(ctx, c.B().Incr().Key("k").Build()).AsInt64(); err != nil || n != 1 {
		t.Fatalf("call after the fault: %d, %v", n, err)
	}
	reply, err := f.Deliver()
	if err != nil || reply != ":2\r\n" {
		t.Fatalf("Deliver: %q, %v; want the reply of a second INCR", reply, err)
	}
	if _, err := f.Deliver(); err == nil {
		t.Fatal("a second Deliver sent the command again")
	}
	mustDo(t, s, "2", "GET", "k")
}

// Only the Nth match is cut, only commands with the key among their KEYS match, an EVALSHA answered
// NOSCRIPT is no match, and Disarm stops a fault that has not fired.
func TestProxyNthKeyDisarm(t *testing.T) {
	s, p, c := proxied(t)
	ctx := context.Background()
	f := p.Arm(Rule{Cut: LoseRequest, Key: "k", Nth: 3})
	for i := range 2 {
		if err := incr.Exec(ctx, c, []string{"k"}, []string{"k"}).Error(); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		// k in ARGV only: not a match.
		if err := incr.Exec(ctx, c, []string{"other"}, []string{"k"}).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if f.HasFired() || f.Seen() != 2 {
		t.Fatalf("fired %v after %d matches", f.HasFired(), f.Seen())
	}
	if err := incr.Exec(ctx, c, []string{"k"}, nil).Error(); err == nil {
		t.Fatal("third call not cut")
	}
	fired(t, f)
	mustDo(t, s, "2", "GET", "k")
	if f.Disarm() {
		t.Fatal("Disarm of a fired fault reported it unfired")
	}
	g := p.Arm(Rule{Cut: LoseRequest, Key: "k"})
	if !g.Disarm() {
		t.Fatal("Disarm of an armed fault reported it fired")
	}
	if err := incr.Exec(ctx, c, []string{"k"}, nil).Error(); err != nil {
		t.Fatalf("after Disarm: %v", err)
	}
	mustDo(t, s, "3", "GET", "k")
}

// send writes cmds to addr in one write, as a client that pipelines does, and returns the type and
// scalar elements of each reply frame it reads until the connection ends.
func send(t *testing.T, addr string, cmds [][]string, inline string) (types []byte, values [][]string) {
	t.Helper()
	conn, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	for _, cmd := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(cmd))
		for _, a := range cmd {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	b.WriteString(inline)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	in := &respReader{r: bufio.NewReader(conn)}
	for {
		typ, _, strs, err := in.frame()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the connection was not cut")
			}
			return types, values
		}
		types = append(types, typ)
		values = append(values, strs)
	}
}

// Drop closes every connection without a fault: the next command fails or dials again, and nothing
// counts as a cut.
func TestProxyDrop(t *testing.T) {
	s, p, c := proxied(t)
	ctx := context.Background()
	if err := incr.Exec(ctx, c, []string{"k"}, nil).Error(); err != nil {
		t.Fatal(err)
	}
	p.Drop()
	deadline := time.Now().Add(10 * time.Second)
	for incr.Exec(ctx, c, []string{"k"}, nil).Error() != nil {
		if time.Now().After(deadline) {
			t.Fatal("no command went through after Drop")
		}
	}
	if v, _ := s.Do("GET", "k"); p.Cuts() != 0 || func() bool { n, _ := strconv.Atoi(v); return n < 2 }() {
		t.Fatalf("k = %q, %d cuts", v, p.Cuts())
	}
}

// Pipelined commands around the faulted one: the replies before it are forwarded in order, its own
// is lost (or it never reaches the server), and the commands after it never reach the server.
func TestProxyPipeline(t *testing.T) {
	for _, cut := range []Cut{LoseReply, LoseRequest} {
		t.Run(cut.String(), func(t *testing.T) {
			s := Start(t)
			p := StartProxy(t, s.Addr)
			f := p.Arm(Rule{Cut: cut, Key: "k"})
			var cmds [][]string
			for range 5 {
				cmds = append(cmds, []string{"INCR", "before"})
			}
			cmds = append(cmds, []string{"EVAL", incrSrc, "1", "k"})
			for range 5 {
				cmds = append(cmds, []string{"INCR", "after"})
			}
			types, values := send(t, p.Addr(), cmds, "")
			if string(types) != ":::::" {
				t.Fatalf("replies %q %q, want the 5 before the cut", types, values)
			}
			for i, v := range values {
				if v[0] != fmt.Sprint(i+1) {
					t.Fatalf("reply %d is %q: out of order", i, v)
				}
			}
			fired(t, f)
			want := map[Cut]string{LoseReply: "1", LoseRequest: ""}[cut]
			mustDo(t, s, want, "GET", "k")
			mustDo(t, s, "5", "GET", "before")
			mustDo(t, s, "", "GET", "after")
		})
	}
}

// Every RESP3 type passes through, replies stay aligned with their commands (a push before a reply
// is not one), and the cut still falls on the right reply.
func TestProxyRESP3(t *testing.T) {
	s := Start(t)
	p := StartProxy(t, s.Addr)
	f := p.Arm(Rule{Cut: LoseReply, Commands: []string{"INCR"}, Key: "k"})
	cmds := [][]string{{"HELLO", "3"}, {"HSET", "h", "f", "v"}, {"HGETALL", "h"}, {"SADD", "s", "m"}, {"SMEMBERS", "s"}}
	for _, typ := range []string{"attrib", "push", "bignum", "verbatim", "true", "null", "double", "map", "set"} {
		cmds = append(cmds, []string{"DEBUG", "PROTOCOL", typ})
	}
	cmds = append(cmds, []string{"INCR", "k"}, []string{"INCR", "k"})
	types, _ := send(t, p.Addr(), cmds, "PING inline\r\n") // the inline one comes after the cut
	// HELLO's map, 1, the map, 1, the set; attrib's reply (the attribute is part of it), the push
	// and then its reply, the bignum, verbatim, true, null, double, map and set; nothing for INCR.
	if want := "%:%:~$>$(=#_,%~"; string(types) != want {
		t.Fatalf("types of the frames received %q, want %q", types, want)
	}
	fired(t, f)
	mustDo(t, s, "1", "GET", "k")
}

// A Channel rule loses a Pub/Sub message with the subscriber's connection; other messages pass.
func TestProxyMessage(t *testing.T) {
	s, p, c := proxied(t)
	got := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- c.Receive(ctx, c.B().Subscribe().Channel("news").Build(), func(m rueidis.PubSubMessage) { got <- m.Message })
	}()
	publish := func(msg string) {
		t.Helper()
		for {
			n, err := s.Do("PUBLISH", "news", msg)
			if err != nil {
				t.Fatal(err)
			}
			if n == "1" {
				return
			}
			time.Sleep(10 * time.Millisecond) // not subscribed yet
		}
	}
	publish("first")
	if m := <-got; m != "first" {
		t.Fatalf("received %q", m)
	}
	f := p.Arm(Rule{Channel: "news"})
	publish("second")
	fired(t, f)
	if cmd := f.Command(); !slices.Equal(cmd, []string{"message", "news", "second"}) {
		t.Fatalf("cut %q", cmd)
	}
	// rueidis subscribes again on a new connection: the next message is the one after the lost one.
	publish("third")
	if m := <-got; m != "third" {
		t.Fatalf("received %q after the cut, want the message after the lost one", m)
	}
	cancel()
	<-done
}

// The parser on what no server test produces: a blob error, nested attributes, nulls, and an inline
// command.
func TestProxyParser(t *testing.T) {
	stream := "!8\r\nSYNTAX x\r\n" +
		"*2\r\n|1\r\n+a\r\n:1\r\n:5\r\n$-1\r\n" +
		"*-1\r\n" +
		"|1\r\n+ttl\r\n:3\r\n=8\r\ntxt:abcd\r\n" +
		"%1\r\n+k\r\n*1\r\n,1.5\r\n"
	in := &respReader{r: bufio.NewReader(strings.NewReader(stream))}
	var got []string
	for {
		typ, raw, strs, err := in.frame()
		if err != nil {
			break
		}
		got = append(got, fmt.Sprintf("%c%q%d", typ, strs, len(raw)))
	}
	want := []string{`!["SYNTAX x"]14`, `*["5" ""]25`, `*[]5`, `=["txt:abcd"]28`, `%["k" ""]18`}
	if !slices.Equal(got, want) {
		t.Fatalf("frames\n got %q\nwant %q", got, want)
	}
	in = &respReader{r: bufio.NewReader(strings.NewReader("SET a  b\r\n\n*1\r\n$4\r\nPING\r\n"))}
	for _, want := range [][]string{{"SET", "a", "b"}, nil, {"PING"}} {
		_, args, err := in.command()
		if err != nil || !slices.Equal(args, want) {
			t.Fatalf("command %q, %v, want %q", args, err, want)
		}
	}
}

// A cluster behind proxies: every node announces its proxy, so that a cluster client reaches each
// node only through it (redirects included), and a fault armed on the cluster cuts at whichever node
// serves the key.
func TestProxiedCluster(t *testing.T) {
	t.Parallel()
	c := StartProxiedCluster(t, 3, 1)
	if len(c.Proxies) != 6 || len(c.Addrs) != 3 {
		t.Fatalf("layout: %d proxies, addrs %v", len(c.Proxies), c.Addrs)
	}
	for i, m := range c.Masters {
		if c.Addrs[i] != c.Proxies[i].Addr() {
			t.Fatalf("Addrs[%d] = %s, want master %s's proxy %s", i, c.Addrs[i], m.Addr, c.Proxies[i].Addr())
		}
	}
	clusterClient(t, c)
	shards, err := c.Masters[0].Do("CLUSTER", "SHARDS")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range c.Servers() {
		if !strings.Contains(shards, "\nport\n"+strconv.Itoa(c.Proxies[i].Port())+"\n") {
			t.Fatalf("CLUSTER SHARDS does not name %s's proxy port %d:\n%s", s.Addr, c.Proxies[i].Port(), shards)
		}
	}
	// A client given one node only must still reach every slot through the proxies.
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs[:1], DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	for i := range 30 {
		k := fmt.Sprintf("k%d", i)
		before := c.Proxies[0].Cuts() + c.Proxies[1].Cuts() + c.Proxies[2].Cuts()
		f := c.Arm(Rule{Cut: LoseReply, Key: k})
		if err := incr.Exec(ctx, client, []string{k}, nil).Error(); err == nil {
			t.Fatalf("%s: not cut", k)
		}
		fired(t, f)
		if n, err := client.Do(ctx, client.B().Get().Key(k).Build()).ToString(); err != nil || n != "1" {
			t.Fatalf("%s after a lost reply: %q, %v", k, n, err)
		}
		if after := c.Proxies[0].Cuts() + c.Proxies[1].Cuts() + c.Proxies[2].Cuts(); after != before+1 {
			t.Fatalf("%s: %d cuts, want 1", k, after-before)
		}
	}
}
