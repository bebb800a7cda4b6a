package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
)

// whoisPrefix names the side key where the tool says which process holds a name: a hash from the
// owner field (or permit id) to a holderInfo, beside the primitive's keys and in their hash slot,
// with the hold's TTL. It is the tool's own key; Redisson and the library neither read nor write it.
const whoisPrefix = "redisync_holder"

// whoisKey is the side key of the object c calls name.
func whoisKey(c *redisync.Client, name string) string {
	cc := core.Of(c)
	key, _ := cc.Name("", name) // the name has been checked when the object was made
	return cc.Names().Prefixed(whoisPrefix, key)
}

// holderInfo says who holds: what an operator needs to find the process. Anyone who can read
// Redis reads it, so COMMAND's arguments, which may hold secrets (--api-token=...), are there only
// when the holder was started with --record-command.
type holderInfo struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Program string `json:"program,omitempty"` // COMMAND's name, without its directory
	Command string `json:"command,omitempty"` // COMMAND and its arguments, with --record-command
}

func (h holderInfo) String() string {
	what := h.Command
	if what == "" {
		what = h.Program
	}
	return fmt.Sprintf("pid %d on %s (%s)", h.PID, h.Host, what)
}

// newHolderInfo describes this process running argv (COMMAND and its arguments).
func newHolderInfo(argv []string, recordCommand bool) holderInfo {
	host, _ := os.Hostname()
	h := holderInfo{Host: host, PID: os.Getpid(), Program: filepath.Base(argv[0])}
	if recordCommand {
		h.Command = strings.Join(argv, " ")
	}
	return h
}

// registration keeps the tool's holderInfo in Redis while it holds, renewing it with the hold's TTL.
type registration struct {
	stop func()
}

// register writes info for owner under name's side key and keeps it until stop, which deletes it.
// Failures are ignored: the entry is for people, the hold does not need it.
func register(c *redisync.Client, name, owner string, ttl time.Duration, info holderInfo) registration {
	rdb := c.Redis()
	key := whoisKey(c, name)
	b, _ := json.Marshal(info)
	write := func(ctx context.Context) {
		rdb.DoMulti(ctx,
			rdb.B().Hset().Key(key).FieldValue().FieldValue(owner, string(b)).Build(),
			rdb.B().Pexpire().Key(key).Milliseconds(max(ttl.Milliseconds(), 1)).Build())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	write(ctx)
	go func() {
		defer close(done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				write(ctx)
			}
		}
	}()
	return registration{stop: func() {
		cancel()
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		rdb.Do(ctx, rdb.B().Hdel().Key(key).Field(owner).Build())
	}}
}

// whois reads the holderInfo entries of the given owner fields (or permit ids) in an object's
// whois key.
func whois(r *reader, key string, fields []string) map[string]*holderInfo {
	vals, err := r.multi(r.rdb.B().Hmget().Key(key).Field(fields...).Build())[0].ToArray()
	if err != nil {
		return nil
	}
	out := make(map[string]*holderInfo, len(fields))
	for i, v := range vals {
		if s, err := v.ToString(); err == nil && i < len(fields) {
			var h holderInfo
			if json.Unmarshal([]byte(s), &h) == nil {
				out[fields[i]] = &h
			}
		}
	}
	return out
}

// holdersOf describes who holds name, for the line a waiting tool prints: the entries of its
// whois key, of which one page is read.
func holdersOf(ctx context.Context, c *redisync.Client, name string) string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	rdb := c.Redis()
	page, _ := rdb.Do(ctx, rdb.B().Hscan().Key(whoisKey(c, name)).Cursor(0).Count(maxShown).Build()).AsScanEntry()
	var s []string
	for _, v := range pairs(page.Elements) {
		var h holderInfo
		if json.Unmarshal([]byte(v), &h) == nil {
			s = append(s, escape(h.String()))
		}
	}
	if len(s) == 0 {
		return "a process that does not say who it is (not this tool)"
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}
