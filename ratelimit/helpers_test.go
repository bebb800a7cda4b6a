package ratelimit_test

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/lua"
)

func TestMain(m *testing.M) { testkit.Main(m) }

var seq atomic.Int64

// unique returns a fresh limiter name, so that tests sharing a server never meet.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), seq.Add(1))
}

// acquireSHA is the SHA1 of the acquiring script as it is sent.
var acquireSHA = lua.Load("ratelimit_acquire.lua").SHA1()

// grant is one acquisition as the server answered it: its time by the server's clock, in ms.
type grant struct {
	at, permits int64
}

// recorder is a rueidis client that watches a Client's acquiring script: it counts the tries and
// records every grant with the server time the script returned.
type recorder struct {
	rueidis.Client
	tries atomic.Int64
	// after runs once a try has been answered (for tests that act while an acquisition is in flight).
	after atomic.Pointer[func()]
	log   *grantLog
}

type grantLog struct {
	mu     sync.Mutex
	grants []grant
}

func (g *grantLog) add(at, permits int64) {
	g.mu.Lock()
	g.grants = append(g.grants, grant{at, permits})
	g.mu.Unlock()
}

// sorted returns the grants by time.
func (g *grantLog) sorted() []grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := append([]grant(nil), g.grants...)
	sort.Slice(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

func (r *recorder) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands()
	hit := len(args) > 9 && (args[0] == "EVALSHA" && args[1] == acquireSHA ||
		args[0] == "EVAL" && fmt.Sprintf("%x", sha1.Sum([]byte(args[1]))) == acquireSHA)
	var n int64
	if hit {
		fmt.Sscan(args[8], &n) // EVALSHA sha 5 k1..k5 permits member; read before Do recycles cmd
	}
	res := r.Client.Do(ctx, cmd)
	if !hit {
		return res
	}
	r.tries.Add(1)
	if reply, err := res.AsIntSlice(); err == nil && len(reply) == 2 && reply[0] == 1 && r.log != nil {
		r.log.add(reply[1], n)
	}
	if fn := r.after.Load(); fn != nil {
		(*fn)()
	}
	return res
}

// recorded returns a Client on tg whose acquiring tries are counted and whose grants go to log.
func recorded(t testing.TB, tg *testkit.Target, log *grantLog, opts ...redisync.Option) (*redisync.Client, *recorder) {
	t.Helper()
	r := &recorder{Client: tg.Redis(t), log: log}
	c, err := redisync.Wrap(r, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.CloseClean(t, c) })
	return c, r
}

// window is a limiter's window as Redis holds it: the value and each grant's permits and score.
type window struct {
	value  string
	grants []grant
}

func readWindow(t testing.TB, rdb rueidis.Client, value, permits string) window {
	t.Helper()
	ctx := context.Background()
	v, err := rdb.Do(ctx, rdb.B().Get().Key(value).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	zs, err := rdb.Do(ctx, rdb.B().Zrange().Key(permits).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		t.Fatal(err)
	}
	w := window{value: v}
	for _, z := range zs {
		w.grants = append(w.grants, grant{at: int64(z.Score), permits: unpack(t, z.Member)})
	}
	return w
}

// unpack decodes a grant as struct.unpack('Bc0I', member) does, and checks Redisson's id length.
func unpack(t testing.TB, member string) int64 {
	t.Helper()
	if len(member) != 1+16+4 || member[0] != 16 {
		t.Fatalf("grant %x: want a 16-byte id and a 4-byte count", member)
	}
	return int64(binary.LittleEndian.Uint32([]byte(member[17:])))
}

func (w window) used() int64 {
	var n int64
	for _, g := range w.grants {
		n += g.permits
	}
	return n
}

// serverMs returns the server's clock in ms.
func serverMs(t testing.TB, rdb rueidis.Client) int64 {
	t.Helper()
	ts, err := rdb.Do(context.Background(), rdb.B().Time().Build()).AsIntSlice()
	if err != nil {
		t.Fatal(err)
	}
	return ts[0]*1000 + ts[1]/1000
}
