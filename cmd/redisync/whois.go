package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

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

// holderInfo says who holds: what an operator needs to find the process.
type holderInfo struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Command string `json:"command"`
}

func (h holderInfo) String() string {
	return fmt.Sprintf("pid %d on %s (%s)", h.PID, h.Host, h.Command)
}

// registration keeps the tool's holderInfo in Redis while it holds, renewing it with the hold's TTL.
type registration struct {
	stop func()
}

// register writes this process's holderInfo for owner under name's side key and keeps it until
// stop, which deletes it. Failures are ignored: the entry is for people, the hold does not need it.
func register(c *redisync.Client, name, owner string, ttl time.Duration, argv []string) registration {
	rdb := c.Redis()
	key := whoisKey(c, name)
	host, _ := os.Hostname()
	b, _ := json.Marshal(holderInfo{Host: host, PID: os.Getpid(), Command: strings.Join(argv, " ")})
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

// whois reads the holderInfo entries in an object's whois key, by owner field or permit id.
func whois(ctx context.Context, rdb rueidis.Client, key string) map[string]holderInfo {
	m, err := rdb.Do(ctx, rdb.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		return nil
	}
	out := make(map[string]holderInfo, len(m))
	for owner, v := range m {
		var h holderInfo
		if json.Unmarshal([]byte(v), &h) == nil {
			out[owner] = h
		}
	}
	return out
}

// holdersOf describes who holds name, for the line a waiting tool prints.
func holdersOf(ctx context.Context, c *redisync.Client, name string) string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	infos := whois(ctx, c.Redis(), whoisKey(c, name))
	if len(infos) == 0 {
		return "a process that does not say who it is (not this tool)"
	}
	var s []string
	for _, h := range infos {
		s = append(s, escape(h.String()))
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}
