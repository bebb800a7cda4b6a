package core

import (
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/send"
)

// slotOf is the slot Redis Cluster computes for key, its tag found as the specification says,
// independently of Slot: the first '{' and the first '}' after it delimit the tag when something
// lies between. The tag holds no '}', so Slot hashes all of it.
func slotOf(key string) uint16 {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	return send.Slot(key)
}

// Redisson's RedissonObject.prefixName and suffixName, and RedissonCountDownLatch's channel.
func redissonPrefixed(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

func redissonSuffixed(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// tagged reports whether key hashes by a tag.
func tagged(key string) bool {
	s := strings.IndexByte(key, '{')
	return s >= 0 && strings.IndexByte(key[s+1:], '}') > 0
}

// FuzzNames: whatever the bytes of a name, nothing panics; outside a cluster every side key and
// channel is Redisson's; on a cluster each is Redisson's when Redisson's hashes by a tag to the name's
// slot, and hashes to the name's slot in any case, so one script may touch all of them.
func FuzzNames(f *testing.F) {
	for _, seed := range []string{
		"", "a", "orders", "{}", "{", "}", "a{", "a{}b", "a}b", "}{", "{a}", "x{a}y", "{a}{b}",
		"{{a}}", "a{b{c}d}", "é{ü}", "锁", "\x00", "\xff\xfe", "{\x00}", strings.Repeat("x", 10000),
		strings.Repeat("{", 300) + "}", "redisson_lock__channel:{a}", "cfg}v2", "cfg{v2", "{job}:7",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return // refused by every primitive before a key is built
		}
		slot := slotOf(name)
		if got := send.Slot(name); got != slot {
			t.Fatalf("send.Slot(%q) = %d, specification says %d", name, got, slot)
		}
		type pair struct{ got, redisson string }
		for _, n := range []Names{{}, {Cluster: true}} {
			side := n.sideKeys(make([]string, 3), name, []string{"redisson_lock_queue", "redisson_lock_timeout", ":timeout"}, "7")
			if want := n.Suffixed(name, "timeout") + "7"; side[2] != want {
				t.Fatalf("name %q: a side key with a tail %q, want %q", name, side[2], want)
			}
			for _, p := range []pair{
				{n.Prefixed("redisson_lock__channel", name), redissonPrefixed("redisson_lock__channel", name)},
				{n.Prefixed("redisson_lock_token", name), redissonPrefixed("redisson_lock_token", name)},
				{side[0], redissonPrefixed("redisson_lock_queue", name)},
				{side[1], redissonPrefixed("redisson_lock_timeout", name)},
				{n.Suffixed(name, "timeout"), redissonSuffixed(name, "timeout")},
				{n.Key("redisson_lock_token", name), redissonPrefixed("redisson_lock_token", name)},
				{n.Key(":timeout", name), redissonSuffixed(name, "timeout")},
				{n.Key(":", name) + "o:rwlock_timeout:1", redissonSuffixed(name, "o:rwlock_timeout:1")},
				{n.Suffixed(name, "rwlock_timeout:1"), redissonSuffixed(name, "rwlock_timeout:1")},
				{n.Braced("redisson_countdownlatch__channel__", name, "redisson_countdownlatch__channel_"),
					"redisson_countdownlatch__channel__{" + name + "}"},
			} {
				fits := slotOf(p.redisson) == slot && (tagged(p.redisson) || strings.HasPrefix(p.redisson, "redisson_countdownlatch"))
				switch {
				case !n.Cluster && p.got != p.redisson:
					t.Fatalf("name %q: %q, Redisson's is %q", name, p.got, p.redisson)
				case n.Cluster && slotOf(p.got) != slot:
					t.Fatalf("name %q: side key %q on a cluster is in slot %d, the name in %d", name, p.got, slotOf(p.got), slot)
				case n.Cluster && fits && p.got != p.redisson:
					t.Fatalf("name %q: %q on a cluster, Redisson's %q is in the name's slot", name, p.got, p.redisson)
				}
			}
		}
	})
}
