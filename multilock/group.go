package multilock

//go:generate go run ../internal/gen/lockface

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"strconv"

	"github.com/minio/highwayhash"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/errs"
	holds "github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// Group locks many values of one group, all or none, in one command: Redisson's
// RedissonFasterMultiLock (getMultiLock(group, values)). Where a MultiLock over 200 locks sends 200
// commands to acquire, a Group of 200 values sends one. It is safe for concurrent use.
//
// Two Groups exclude each other where their value sets meet in the same group, and not otherwise;
// an owner's holds of overlapping value sets each count on the values they share. The owner travels
// in the context as for rlock.Lock: Lock returns a ctx that carries it and ends when the hold does
// (redisync.ErrReleased after Unlock, redisync.ErrLost when the lease ends or the watchdog finds a
// value gone), the same ctx re-enters, and every call takes effect once whatever the network loses.
//
// See the package doc for the Group's layout in Redis and the clocks it is kept by.
type Group struct {
	l      core.Lock
	c      *core.Client
	fields []string // the values' field names, sorted: the lock's tail
}

const groupKind = "group lock"

// groupSpec is the group lock in Redis: its keys, its scripts, and how its waiters wait.
var groupSpec = &core.Spec{
	Kind: groupKind,
	Keys: map[string]string{"channel": layout.Group.Channel},
	Scripts: core.Scripts{
		Acquire: lua.Load("grouplock_acquire.lua"),
		Release: lua.Load("grouplock_release.lua"),
		Renew:   lua.Load("grouplock_renew.lua"),
		Force:   lua.Load("grouplock_force_release.lua"),
		Extend:  lua.Load("grouplock_extend.lua"),
	},
	// A release frees values that waiters for different value sets may want: it wakes them all.
	Policy: pubsub.WakeAll,
}

var groupState = lua.Load("grouplock_state.lua")

// GroupOption configures a Group.
type GroupOption func(*groupOptions)

type groupOptions struct {
	core.LockOptions
	encode func(string) []byte
}

// WithEncoding names each value by the bytes encode returns for it instead of its UTF-8 bytes. A Java
// process names a value by what its Redisson codec writes: the UTF-8 bytes of value.toString() with
// StringCodec or LongCodec (the default here), other bytes with other codecs (Kryo5Codec, Redisson's
// default, JsonJacksonCodec...): give encode the bytes that codec writes, for Go and Java to meet.
func WithEncoding(encode func(value string) []byte) GroupOption {
	return func(o *groupOptions) { o.encode = encode }
}

// NewGroup returns the lock of values (at least one; repeats count once) in group, whose name is the
// hash's key. Redisson's documentation advises a group as narrow as the values allow ("class_100",
// not "class"): every holder of the group shares one hash and one channel.
func NewGroup(c *redisync.Client, group string, values []string, opts ...GroupOption) (*Group, error) {
	var o groupOptions
	for _, opt := range opts {
		opt(&o)
	}
	if len(values) == 0 {
		return nil, errs.Invalid(groupKind, group, "no values")
	}
	fields := make([]string, len(values))
	for i, v := range values {
		b := []byte(v)
		if o.encode != nil {
			b = o.encode(v)
		}
		fields[i] = GroupField(b)
	}
	slices.Sort(fields)
	fields = slices.Compact(fields)
	o.Tail = fields
	g := &Group{c: core.Of(c), fields: fields}
	if err := g.l.Init(g.c, groupSpec, group, o.LockOptions); err != nil {
		return nil, err
	}
	return g, nil
}

// redissonKey is the HighwayHash key Redisson hashes values with (org.redisson.misc.Hash): four 64-bit
// words, which HighwayHash reads little-endian.
var redissonKey = func() []byte {
	key := make([]byte, 32)
	for i, w := range []uint64{0x9e3779b97f4a7c15, 0xf39cc0605cedc834, 0x1082276bf3a27251, 0xf86c6a11d0c18e95} {
		binary.LittleEndian.PutUint64(key[8*i:], w)
	}
	return key
}()

// GroupField returns the hash field that names a value whose encoded form is encoded, as Redisson
// names it (Hash.hash128toBase64): the 128-bit HighwayHash of encoded under Redisson's key, its two
// 64-bit halves big-endian, in standard Base64 without padding (22 characters).
func GroupField(encoded []byte) string {
	sum := highwayhash.Sum128(encoded, redissonKey)
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], binary.LittleEndian.Uint64(sum[:8]))
	binary.BigEndian.PutUint64(b[8:], binary.LittleEndian.Uint64(sum[8:]))
	return base64.RawStdEncoding.EncodeToString(b[:])
}

// Fields returns the field names of the Group's values in the hash, sorted (see GroupField).
func (g *Group) Fields() []string { return slices.Clone(g.fields) }

// IsLocked reports whether anyone holds any value of the Group (Redisson's isLocked).
func (g *Group) IsLocked(ctx context.Context) (bool, error) { return g.state(ctx, "") }

// IsHeld reports whether ctx's owner holds every value of the Group (Redisson's
// isHeldByCurrentThread). Like Unlock, it answers even when ctx has ended.
func (g *Group) IsHeld(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(groupKind, g.Name(), "nil context")
	}
	owner, ok := holds.OwnerID(ctx)
	if !ok {
		return false, nil
	}
	return g.IsHeldBy(context.WithoutCancel(ctx), owner)
}

// IsHeldBy reports whether owner, an owner id of this Client (redisync.OwnerID of a hold's ctx),
// holds every value of the Group (Redisson's isHeldByThread, an owner id standing for the thread id).
func (g *Group) IsHeldBy(ctx context.Context, owner int64) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(groupKind, g.Name(), "nil context")
	}
	return g.state(ctx, g.c.Values.Client+":"+strconv.FormatInt(owner, 10))
}

// state runs the state script for owner ("": anyone).
func (g *Group) state(ctx context.Context, owner string) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(groupKind, g.Name(), "nil context")
	}
	args := append([]string{owner}, g.fields...)
	n, err := g.c.QueryScript(ctx, groupState, []string{g.Name()}, args).AsInt64()
	if err != nil {
		return false, errs.Errorf(groupKind, g.Name(), err)
	}
	return n == 1, nil
}
