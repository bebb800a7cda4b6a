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

	"github.com/redis/rueidis"
)

//go:embed *.lua
var files embed.FS

// Script is one Lua script. It is safe for concurrent use.
type Script struct {
	name string
	src  string
	sha  string
	lua  *rueidis.Lua
	keys []string // the names its header declares: "--! KEYS a b c"
	args []string // "--! ARGV x y z"

	// The library's scripts start with "local MODE = 0"; the same script with MODE 1 is sent again
	// after a lost answer, and with MODE 2 to undo a call whose answer never came (see Resent).
	modes   bool
	mode    int
	once    sync.Once
	variant [2]*Script
}

// New returns a script of one's own, named name in errors and logs.
func New(name, src string) *Script {
	return &Script{name: name, src: src, sha: sha(src), lua: rueidis.NewLuaScript(src)}
}

// Load returns the library's script made of the embedded files names, in order: the first ones can
// define functions that the last one calls, so that scripts share code without a round trip. The
// script's KEYS and ARGV are those the last file declares in its header. It panics when a file is
// missing, which only a mistake in this module can cause, and any test that loads the package finds.
func Load(names ...string) *Script {
	parts := make([]string, len(names))
	for i, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			panic(fmt.Sprintf("lua: %v", err))
		}
		parts[i] = string(b)
	}
	main := parts[len(parts)-1]
	s := build(names[len(names)-1], strings.Join(parts, "\n"), 0)
	s.keys, s.args = declared(main, "KEYS"), declared(main, "ARGV")
	return s
}

// build prefixes src with its mode.
func build(name, src string, mode int) *Script {
	src = fmt.Sprintf("local MODE = %d\n%s", mode, src)
	return &Script{name: name, src: src, sha: sha(src), lua: rueidis.NewLuaScript(src), modes: true, mode: mode}
}

func sha(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// declared reads the names a header line "--! WHAT name name ..." gives.
func declared(src, what string) []string {
	for _, line := range strings.Split(src, "\n") {
		if rest, ok := strings.CutPrefix(line, "--! "+what); ok {
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
	if !s.modes || !strings.Contains(s.src[len("local MODE = 0\n"):], "MODE") {
		return s
	}
	s.once.Do(func() {
		body := s.src[len("local MODE = 0\n"):]
		for i := range s.variant {
			v := build(s.name, body, i+1)
			v.keys, v.args = s.keys, s.args
			s.variant[i] = v
		}
	})
	return s.variant[m-1]
}
