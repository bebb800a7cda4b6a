package core

import (
	"strings"
	"sync"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/send"
)

// An object's side keys and channels are Redisson's (RedissonObject.prefixName and suffixName):
// "prefix:{name}" and "{name}:suffix", or "prefix:name" and "name:suffix" when name contains a '{'
// anywhere. On a standalone server and under Sentinel those are the names, whatever the name, so that
// a Java process on the same name always meets ours.
//
// On a cluster a script may only touch keys and channels of one slot, and Redisson's names leave the
// name's slot for two kinds of names: one with a '{' but no complete tag ("a{", "a{}b"), whose side
// keys then hash whole, and one with a '}' outside a tag ("a}b"), whose side keys take the tag "a".
// Redisson's own scripts fail there (CROSSSLOT), so no Java process can use such a name on a
// cluster, and we keep the name's slot instead: for the first kind by wrapping as usual ("prefix:{a{}"
// has the tag "a{", the whole name), for the second with a short tag that hashes to the name's slot
// ("prefix:{T}:a}b"). Every other name gets Redisson's names on a cluster too.

// Names builds side keys and channels for one kind of deployment.
type Names struct {
	Cluster bool // a Redis Cluster, where names must keep their slot
}

// Names returns the naming of the client's deployment.
func (c *Client) Names() Names { return Names{Cluster: c.cluster} }

// SideKeys returns the side keys of name, each given by its form: "prefix" for "prefix:{name}",
// "prefix:" for "prefix:{name}:", ":suffix" for "{name}:suffix", ":" for "{name}:". They are cut
// from one string, so that a primitive built per request (a lock per order id, say) pays one
// allocation for all its names.
func (c *Client) SideKeys(name string, forms ...string) []string {
	return c.Names().sideKeys(make([]string, len(forms)), name, forms, "")
}

// sideKeys fills keys with the side keys of name by forms, cut from one string; the last one has
// tail appended.
func (n Names) sideKeys(keys []string, name string, forms []string, tail string) []string {
	redisson := n.redisson(name)
	var b strings.Builder
	size := len(tail)
	for _, f := range forms {
		size += len(f) + len(name) + 8
	}
	b.Grow(size)
	var buf [12]int
	ends := buf[:0]
	if len(forms) > len(buf) {
		ends = make([]int, 0, len(forms))
	}
	for _, f := range forms {
		switch {
		case strings.HasPrefix(f, ":"):
			writeSuffixed(&b, name, f[1:], redisson)
		case strings.HasSuffix(f, ":"):
			writePrefixed(&b, f[:len(f)-1], name, redisson)
			b.WriteByte(':')
		default:
			writePrefixed(&b, f, name, redisson)
		}
		ends = append(ends, b.Len())
	}
	b.WriteString(tail)
	all := b.String()
	if len(ends) > 0 {
		ends[len(ends)-1] = len(all)
	}
	start := 0
	for i, end := range ends {
		keys[i], start = all[start:end], end
	}
	return keys
}

// Key returns the side key or channel of name by its form (see SideKeys).
func (n Names) Key(form, name string) string {
	return n.sideKeys(make([]string, 1), name, []string{form}, "")[0]
}

// Prefixed returns the side key or channel "prefix:{name}" (see above for the exact rule).
func (n Names) Prefixed(prefix, name string) string {
	var b strings.Builder
	writePrefixed(&b, prefix, name, n.redisson(name))
	return b.String()
}

// Suffixed returns the side key or channel "{name}:suffix" (see above for the exact rule).
func (n Names) Suffixed(name, suffix string) string {
	var b strings.Builder
	writeSuffixed(&b, name, suffix, n.redisson(name))
	return b.String()
}

// Braced returns the channel prefix + "{" + name + "}", braces added whatever name holds (the
// countdown latch's, which Redisson builds without prefixName), unless on a cluster that would leave
// name's slot: then fallback.
func (n Names) Braced(prefix, name, fallback string) string {
	if ch := prefix + "{" + name + "}"; !n.Cluster || send.Slot(ch) == send.Slot(name) {
		return ch
	}
	return n.Prefixed(fallback, name)
}

// redisson reports whether name's side keys are Redisson's: everywhere but on a cluster, where only
// when they hash by a tag to name's slot (whatever the prefix or suffix, which have no braces).
func (n Names) redisson(name string) bool {
	if !n.Cluster {
		return true
	}
	if strings.IndexByte(name, '{') >= 0 {
		return hasTag(name) // the side keys have name's tag, or none
	}
	i := strings.IndexByte(name, '}')
	return i < 0 || (i > 0 && send.Slot(name[:i]) == send.Slot(name)) // the tag is name[:i]
}

func writePrefixed(b *strings.Builder, prefix, name string, redisson bool) {
	b.WriteString(prefix)
	switch {
	case redisson && strings.IndexByte(name, '{') >= 0:
		b.WriteString(":")
	case redisson, !strings.Contains(name, "}"):
		b.WriteString(":{")
		b.WriteString(name)
		b.WriteString("}")
		return
	default:
		b.WriteString(":{")
		b.WriteString(slotTag(send.Slot(name)))
		b.WriteString("}:")
	}
	b.WriteString(name)
}

func writeSuffixed(b *strings.Builder, name, suffix string, redisson bool) {
	switch {
	case redisson && strings.IndexByte(name, '{') >= 0:
		b.WriteString(name)
	case redisson, !strings.Contains(name, "}"):
		b.WriteString("{")
		b.WriteString(name)
		b.WriteString("}")
	default:
		b.WriteString("{")
		b.WriteString(slotTag(send.Slot(name)))
		b.WriteString("}:")
		b.WriteString(name)
	}
	b.WriteString(":")
	b.WriteString(suffix)
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
				if t := send.Slot(s); slotTags[t] == "" {
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

// Name checks an object's name and returns it as the Client's name mapper maps it: the object's key,
// from which its side keys and channels are built, as Redisson builds them from the mapped name
// (RedissonObject.getRawName). Errors are ErrInvalidArgument: a nil client, an empty name, or a name
// the mapper maps to "".
func (c *Client) Name(kind, name string) (string, error) {
	if c == nil {
		return "", errs.Invalid(kind, name, "nil client")
	}
	if name == "" {
		return "", errs.Invalid(kind, name, "empty name")
	}
	if c.cfg.NameMapper == nil {
		return name, nil
	}
	mapped := c.cfg.NameMapper(name)
	if mapped == "" {
		return "", errs.Invalid(kind, name, "the name mapper maps it to an empty name")
	}
	return mapped, nil
}
