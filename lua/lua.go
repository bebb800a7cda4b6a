// Package lua runs Lua scripts on Redis: EVALSHA, and EVAL when the server does not know the script
// yet (NOSCRIPT after a restart, a failover or SCRIPT FLUSH), so no SCRIPT LOAD step is needed.
//
// It also holds every script of redisync, embedded from the .lua files beside it. With package
// pubsub it is the foundation a primitive of one's own can be built on (see the pubsub package's
// Example): a script changes the state atomically and publishes what it changed, and waiters park on
// the channel.
//
// A script receives every key and every Pub/Sub channel it touches in KEYS, never built from ARGV, so
// that Redis Cluster can route it and check that all of them share one slot.
package lua

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

//go:embed *.lua
var files embed.FS

// MemoTTL is how long a library script keeps a call's memo, its answer to a send made again (see
// Resent), at most: the loader gives every script the constant MEMO_TTL, in ms, as it gives MODE.
const MemoTTL = time.Minute

// Script is one Lua script. It is safe for concurrent use.
type Script struct {
	name string
	src  string
	sha  string
	lua  *rueidis.Lua
	keys []string // the names its header declares: "--! KEYS a b c"
	args []string // "--! ARGV x y z"

	// The library's scripts start with "local MODE, MEMO_TTL = 0, <ms>"; the same script with MODE 1
	// is sent again after a lost answer, and with MODE 2 to undo a call whose answer never came (see
	// Resent).
	body    string // what follows that line; "" for a script of one's own
	mode    int
	once    sync.Once
	variant [2]*Script
}

// New returns a script of one's own, named name in errors and logs.
func New(name, src string) *Script {
	return &Script{name: name, src: src, sha: sha(src), lua: rueidis.NewLuaScript(src)}
}

// Load returns the library's script in the embedded file name, which is the whole recipe: a line
// "--! INCLUDE a.lua b.lua" in it stands for those files, there (and so on, in them), so that
// scripts share code without a round trip. Code that only a rare branch needs is included in that
// branch, and costs the common path nothing (every call runs the whole chunk, and each function it
// defines is made anew). The script's KEYS and ARGV are those its own header declares ("--! KEYS a
// b", "--! ARGV x y"; a batch, whose KEYS and ARGV repeat per item, names the ARGV before its items
// on a line "--! BATCH ttl"), and it names them once, at its top, in that order. It panics when a
// file is missing, which only a mistake in this module can cause, and any test that loads the
// package finds.
func Load(name string) *Script {
	s := build(name, expand(name, 0), 0)
	b, _ := files.ReadFile(name)
	s.keys, s.args = declared(string(b), "KEYS"), declared(string(b), "ARGV")
	return s
}

// expand returns the embedded file name with its INCLUDE lines replaced.
func expand(name string, depth int) string {
	b, err := files.ReadFile(name)
	if err != nil || depth > 4 {
		panic(fmt.Sprintf("lua: %s: %v (included %d deep)", name, err, depth))
	}
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "--! INCLUDE "); ok {
			var inc []string
			for _, f := range strings.Fields(rest) {
				inc = append(inc, expand(f, depth+1))
			}
			lines[i] = strings.Join(inc, "\n")
		}
	}
	return strings.Join(lines, "\n")
}

// build prefixes body with its mode and the memos' TTL.
func build(name, body string, mode int) *Script {
	src := fmt.Sprintf("local MODE, MEMO_TTL = %d, %d\n%s", mode, MemoTTL.Milliseconds(), body)
	return &Script{name: name, src: src, sha: sha(src), lua: rueidis.NewLuaScript(src), body: body, mode: mode}
}

func sha(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// declared reads the names a header line "--! WHAT name name ..." gives.
func declared(src, what string) []string {
	for _, line := range strings.Split(src, "\n") {
		if rest, ok := strings.CutPrefix(line, "--! "+what+" "); ok {
			return strings.Fields(rest)
		}
	}
	return nil
}

// Name returns the script's name: for the library's own, its file name.
func (s *Script) Name() string { return s.name }

// SHA1 returns the script's SHA1 digest, by which EVALSHA names it.
func (s *Script) SHA1() string { return s.sha }

// Keys returns the names of the script's KEYS, in order, as its header declares them.
func (s *Script) Keys() []string { return s.keys }

// Args returns the names of the script's ARGV, in order, as its header declares them.
func (s *Script) Args() []string { return s.args }

// Exec runs the script.
func (s *Script) Exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	return s.lua.Exec(ctx, c, keys, args)
}

// EvalCommand returns the EVAL command that runs s, for callers that must send the script in one
// DoMulti together with other commands on the same connection (a WAIT right after an acquisition).
// EVAL needs no NOSCRIPT fallback: the server caches the script as EVALSHA would have found it.
func (s *Script) EvalCommand(c rueidis.Client, keys, args []string) rueidis.Completed {
	return c.B().Eval().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// Resent returns the script to send again when an earlier send's answer was lost (MODE 1): it acts
// only if the earlier send did not, and answers what that one did otherwise. A script that does not
// read MODE is its own, and so is an Undo, which is written to be sent again as it is.
func (s *Script) Resent() *Script {
	if s.mode == 2 {
		return s
	}
	return s.variantOf(1)
}

// Undo returns the script that gives back what a call whose answer never came may have done (MODE
// 2), or s itself for a script that does not read MODE.
func (s *Script) Undo() *Script { return s.variantOf(2) }

func (s *Script) variantOf(m int) *Script {
	if !strings.Contains(s.body, "MODE") {
		return s
	}
	s.once.Do(func() {
		for i := range s.variant {
			v := build(s.name, s.body, i+1)
			v.keys, v.args = s.keys, s.args
			s.variant[i] = v
		}
	})
	return s.variant[m-1]
}
