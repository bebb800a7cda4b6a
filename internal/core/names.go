package core

import (
	"strings"
	"sync"
)

// Side keys and channels of an object must hash to the slot of its main key in Redis Cluster. Redisson's
// layout wraps the name in a hash tag ("prefix:{name}") unless the name already has one, in which case
// the user's tag decides the slot ("prefix:name"). Two kinds of names break that rule, and Redisson puts
// their side keys in another slot: a name with a '{' but no complete tag ("a{", "a{}b") and a name with a
// '}' that is not part of a tag ("a}b"). For the first we wrap as usual ("prefix:{a{}" has tag "a{",
// the whole name). For the second no tag can contain the name, so we use a short tag that hashes to the
// name's slot ("prefix:{T}:a}b"). Every other name gets exactly Redisson's keys.

// Prefixed returns the side key or channel "prefix:{name}" (or the form that keeps name's slot).
func Prefixed(prefix, name string) string {
	var b strings.Builder
	writePrefixed(&b, prefix, name)
	return b.String()
}

func writePrefixed(b *strings.Builder, prefix, name string) {
	b.WriteString(prefix)
	switch {
	case hasTag(name):
		b.WriteString(":")
	case !strings.Contains(name, "}"):
		b.WriteString(":{")
		b.WriteString(name)
		b.WriteString("}")
		return
	default:
		b.WriteString(":{")
		b.WriteString(slotTag(Slot(name)))
		b.WriteString("}:")
	}
	b.WriteString(name)
}

// Suffixed returns the side key or channel "{name}:suffix" (or the form that keeps name's slot).
func Suffixed(name, suffix string) string {
	switch {
	case hasTag(name):
		return name + ":" + suffix
	case !strings.Contains(name, "}"):
		return "{" + name + "}:" + suffix
	default:
		return "{" + slotTag(Slot(name)) + "}:" + name + ":" + suffix
	}
}

// SideKeys returns Prefixed(prefix, name) for each prefix, cut from one string so that a primitive
// built per request (a lock per order id, say) pays one allocation for all its names.
func SideKeys(name string, prefixes ...string) []string {
	var b strings.Builder
	n := 0
	for _, p := range prefixes {
		n += len(p) + len(name) + 8
	}
	b.Grow(n)
	var buf [8]int
	ends := buf[:0]
	if len(prefixes) > len(buf) {
		ends = make([]int, 0, len(prefixes))
	}
	for _, p := range prefixes {
		writePrefixed(&b, p, name)
		ends = append(ends, b.Len())
	}
	all := b.String()
	keys := make([]string, len(prefixes))
	start := 0
	for i, end := range ends {
		keys[i], start = all[start:end], end
	}
	return keys
}

// hasTag reports whether Redis Cluster hashes name by a tag: a '{' followed later by a '}' with at least
// one byte between them.
func hasTag(name string) bool {
	i := strings.IndexByte(name, '{')
	if i < 0 {
		return false
	}
	j := strings.IndexByte(name[i+1:], '}')
	return j > 0
}

// Slot returns the Redis Cluster hash slot of key.
func Slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16(key) & 16383
}

var (
	slotTagsOnce sync.Once
	slotTags     [16384]string
)

// slotTag returns a short string, free of braces, whose slot is slot.
func slotTag(slot uint16) string {
	slotTagsOnce.Do(func() {
		const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
		left := len(slotTags)
		buf := make([]byte, 0, 4)
		var walk func(depth int) bool
		walk = func(depth int) bool {
			if depth == 0 {
				s := string(buf)
				if t := crc16(s) & 16383; slotTags[t] == "" {
					slotTags[t] = s
					left--
				}
				return left == 0
			}
			for i := 0; i < len(alphabet); i++ {
				buf = append(buf, alphabet[i])
				done := walk(depth - 1)
				buf = buf[:len(buf)-1]
				if done {
					return true
				}
			}
			return false
		}
		for depth := 1; left > 0; depth++ {
			walk(depth)
		}
	})
	return slotTags[slot]
}

// crc16 is CRC-16/XMODEM, the hash of Redis Cluster.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
