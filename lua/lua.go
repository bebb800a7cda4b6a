// Package lua holds every server-side script of redisync, embedded from the .lua files beside it.
//
// A script receives every key and every Pub/Sub channel it touches in KEYS, never built from ARGV, so
// that Redis Cluster can route it and check that all of them share one slot.
package lua

import (
	"context"
	"embed"
	"fmt"
	"strings"

	"github.com/redis/rueidis"
)

//go:embed *.lua
var files embed.FS

// Script is one embedded script. Exec sends EVALSHA and falls back to EVAL when the server answers
// NOSCRIPT (after a restart, a failover or SCRIPT FLUSH), so no SCRIPT LOAD step is needed.
//
// Scripts are not retried on network errors: most are not idempotent (re-entry increments a count,
// acquiring permits decrements one), and a blind retry could acquire twice.
type Script struct {
	name  string
	src   string
	lua   *rueidis.Lua
	retry *rueidis.Lua // the same script, re-sent by rueidis after a network error; nil if unsafe
}

// Load returns the script made of the embedded files names, in order: the first ones can define
// functions that the last one calls, so that scripts share code without a round trip. It panics
// when a file is missing, which can only happen through a mistake in this module, caught by any test
// that loads the package.
func Load(names ...string) *Script {
	parts := make([]string, len(names))
	for i, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			panic(fmt.Sprintf("lua: %v", err))
		}
		parts[i] = string(b)
	}
	src := strings.Join(parts, "\n")
	return &Script{name: names[len(names)-1], src: src, lua: rueidis.NewLuaScript(src)}
}

// LoadRetryable is Load for a script that is safe to send twice: rueidis re-sends it after a network
// error. Only idempotent scripts may be loaded this way (an unlock guarded by a request id, a query).
func LoadRetryable(names ...string) *Script {
	s := Load(names...)
	s.retry = rueidis.NewLuaScriptRetryable(s.src)
	return s
}

// Retryable reports whether rueidis re-sends the script after a network error.
func (s *Script) Retryable() bool { return s.retry != nil }

// ExecRetrying runs a retryable script with rueidis's retries: until it gets an answer or ctx ends.
func (s *Script) ExecRetrying(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	return s.retry.Exec(ctx, c, keys, args)
}

// Name returns the file name of the script.
func (s *Script) Name() string { return s.name }

// Exec runs the script.
func (s *Script) Exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	return s.lua.Exec(ctx, c, keys, args)
}
