package core

import (
	"strings"
	"testing"
)

// slotOf is the slot Redis Cluster computes for key, written from the specification independently
// of Slot: the first '{' and the first '}' after it delimit the tag when something lies between.
func slotOf(key string) uint16 {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	return crc16(key) % 16384
}

// FuzzNames: whatever the bytes of a name, nothing panics and every side key and channel built from
// it hashes to the slot of the name itself, so one script may touch all of them on a cluster.
func FuzzNames(f *testing.F) {
	for _, seed := range []string{
		"", "a", "orders", "{}", "{", "}", "a{", "a{}b", "a}b", "}{", "{a}", "x{a}y", "{a}{b}",
		"{{a}}", "a{b{c}d}", "é{ü}", "锁", "\x00", "\xff\xfe", "{\x00}", strings.Repeat("x", 10000),
		strings.Repeat("{", 300) + "}", "redisson_lock__channel:{a}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return // refused by every primitive before a key is built
		}
		slot := slotOf(name)
		if got := Slot(name); got != slot {
			t.Fatalf("Slot(%q) = %d, specification says %d", name, got, slot)
		}
		for _, key := range []string{
			Prefixed("redisson_lock__channel", name), Prefixed("redisson_lock_token", name),
			Prefixed("redisson_lock_queue", name), Suffixed(name, "timeout"), Suffixed(name, "rwlock_timeout:1"),
		} {
			if got := slotOf(key); got != slot {
				t.Fatalf("name %q: side key %q is in slot %d, the name in %d", name, key, got, slot)
			}
		}
		if !hasTag(name) && !strings.Contains(name, "}") {
			// Redisson's layout exactly, for every name it handles correctly itself.
			if got, want := Prefixed("p", name), "p:{"+name+"}"; got != want {
				t.Fatalf("Prefixed(p, %q) = %q, want Redisson's %q", name, got, want)
			}
		}
	})
}
