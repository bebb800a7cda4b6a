package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/internal/send"
	"github.com/redisync/redisync/internal/waiting"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// Hash locks described as data.
//
// rlock, spinlock, fairlock and both sides of rwlock keep Redisson's lock hash (field: the owner,
// value: its hold count) and differ only in their scripts, their side keys and how their waiters
// wait (spinlock is rlock's spec with LockOptions.Backoff). Each
// describes itself with a Spec; the engine fills each script's KEYS and ARGV by the names its header
// declares (lua.Script.Keys and Args), reads the replies, which all lock scripts give alike, keeps
// the holds, waits, renews, and sends every call exactly once.
//
// The names the engine fills:
//   - KEYS: "lock" (the name), "memo" (the prefix of a call's memo: the request id completes it),
//     and every name of Spec.Keys.
//   - ARGV, per lock: "reentrant" and "fenced" ('1' or '0'), "publish" and "numsub"
//     (the commands; numsub is '' where counts cannot be trusted), "client" (the Client's id),
//     "window" (ms a waiter's record lasts; '0' where releases hand nothing over), "ntail" and
//     "tail" (how many values LockOptions.Tail has, and all of them: last), and the names of
//     LockOptions.Values. A renewal gives only "field" of the per-call names.
//   - ARGV, per call: "lease" (ms: the call's lease, or the Client's watchdog timeout; a release
//     gives the lease of the hold it releases), "field" (the hold's field), "owner" (the owner's
//     field, "<client id>:<owner id>"), "held" (the acquisitions Redis counts for the owner before
//     the call), "rid" (the call's request id), "tag" (the waiter's tag, '' before it listens),
//     "waits" ('1' when the acquisition waits), "linger" (ms the Client stays listed among the lock's
//     clients, '' when it need not be listed again), "grant" (the lease a release that hands the lock
//     over gives: '0' for a wake-up only), "queued" ('1' when a leaving waiter may have queued).
//
// A release also gets "waits": '1' when the acquisition it releases had waited for the lock.
//
// The replies: an acquisition answers {1, count, token} when acquired (or the count alone when it
// took no token), {0, ms} or {0, ms, score} when not (try again within ms; score: of the record the
// try left), {2} when the owner holds the lock and re-entry is not allowed, {3} when it is refused
// (Spec.Refused). A release answers how many acquisitions the owner keeps, or -1 when it held none;
// given back (its Undo variant), -3 when there was nothing to give back. A renewal answers one
// integer per hold, 1 when renewed. A forced release answers 1 when the lock was held. An extension
// answers 1 when the owner holds the lock (its lease now lasts at least "lease" from now), 0 when not.

// Spec describes one kind of hash lock.
type Spec struct {
	Kind string // "lock", "spin lock", "fair lock", "read lock", "write lock": for errors and events
	// Keys names the side keys the scripts take, each given by its form in Redisson's naming:
	// "prefix" is "prefix:{N}", "prefix:" is "prefix:{N}:" (a channel prefix that an id completes),
	// ":suffix" is "{N}:suffix", and ":" is "{N}:". Two names say how waiters wait: "channel" is where
	// releases are announced (a prefix: each owner waits on its own, the owner's field completing it),
	// and "wake" is the prefix of each Client's own channel (its id completes it). A lock whose acquire
	// script takes a "tag" records its waiters, and its releases may hand the lock over to them.
	Keys    map[string]string
	Scripts Scripts
	Policy  pubsub.Policy // how many waiters a message on the channel wakes
	Shared  bool          // several owners hold at once (read holds)
	Suffix  string        // what follows the owner in its field (":write")
	Refused error         // what an acquisition's reply {3} means
	once    sync.Once
	plan    specPlan
}

// Scripts are a hash lock's scripts, by what they do.
type Scripts struct {
	Acquire *lua.Script // a try
	Try     *lua.Script // the first try of an acquisition, before its waiter listens (optional)
	Release *lua.Script
	// Renew renews a batch: its KEYS and ARGV are per hold, after ARGV[1], the TTL.
	Renew *lua.Script
	Force *lua.Script
	// Leave runs after a wait that did not acquire, and gives back a hand-over that nobody took
	// (optional).
	Leave  *lua.Script
	Extend *lua.Script // a hold's new lease, kept under the call's memo
	// List lists the Client among the lock's "clients" before its waiters subscribe (optional, see
	// attempt.List).
	List *lua.Script
	// State reads, and refuses a name that holds other data: {pttl, the hold count of "field"}, -2
	// when free, and whatever the kind adds.
	State *lua.Script
}

// bySlot returns the scripts in the order of their slots (sTry...).
func (s *Scripts) bySlot() [nScripts]*lua.Script {
	return [nScripts]*lua.Script{s.Try, s.Acquire, s.Release, s.Renew, s.Force, s.Leave, s.Extend, s.List, s.State}
}

// LockOptions are what every hash lock lets its user choose.
type LockOptions struct {
	Lease        time.Duration // > 0: a fixed lease; 0: the watchdog keeps the lock
	NonReentrant bool
	Fenced       bool
	Values       map[string]string // ARGV values by name, beyond the engine's (a fair lock's "slot")
	// Tail is what the ARGV names "tail" (all of it, last) and "ntail" (how many) stand for: the
	// values a group lock locks. Locks of one name with different tails are different locks.
	Tail []string
	// Backoff, when set, makes waiters spin: instead of waiting for notifications, a waiter sleeps
	// between tries for what a policy, made by Backoff for each acquisition whose first try fails,
	// says next.
	Backoff func() func() time.Duration
}

// The scripts of a Spec, by slot.
const (
	sTry = iota
	sAcquire
	sRelease
	sRenew
	sForce
	sLeave
	sExtend
	sList
	sState
	nScripts
)

// The values a call gives its scripts.
const (
	vField = iota
	vOwner
	vHeld
	vRid
	vTag
	vWaits
	vLinger
	vGrant
	vQueued
	vLease
	nVals
)

var valNames = [nVals]string{"field", "owner", "held", "rid", "tag", "waits", "linger", "grant", "queued", "lease"}

// The values a lock gives its scripts, before those of LockOptions.Values; "tail" stands for a list.
var lockValNames = []string{"reentrant", "fenced", "publish", "numsub", "client", "window", "ntail", "tail"}

// vTail is where "tail" stands in a lock's value table.
const vTail = 7

// specPlan is a Spec resolved once: where each script finds its KEYS and ARGV.
type specPlan struct {
	keys    []string // key names, in the order of a lock's key table
	statics []string // names of the values a lock gives, in the order of its value table
	scripts [nScripts]scriptPlan
	nKeys   int // KEYS of every script together
	// The forms of the key table's side keys (from "memo" on), and the same with the "wake" form again
	// last; where "wake", "clients" and "channel" are in the table (-1: nowhere).
	forms, formsWake       []string
	wake, clients, channel int
	tagged                 bool // the acquire script takes a "tag": releases hand over
}

type scriptPlan struct {
	s    *lua.Script
	keys []int // indices in the key table
	args []int // >= 0: in the value table; < 0: -1 - the call's value
	at   int   // where its KEYS start in a lock's resolved keys
}

func (s *Spec) resolve() *specPlan {
	s.once.Do(func() {
		p := &s.plan
		p.keys = []string{"lock", "memo"}
		for name := range s.Keys {
			p.keys = append(p.keys, name)
		}
		slices.Sort(p.keys[2:])
		p.statics = slices.Clone(lockValNames)
		for i, sc := range s.Scripts.bySlot() {
			if sc == nil {
				continue
			}
			sp := scriptPlan{s: sc, at: p.nKeys}
			for _, k := range sc.Keys() {
				j := slices.Index(p.keys, k)
				if j < 0 {
					panic(fmt.Sprintf("core: %s: script %s takes key %q, which the spec does not name", s.Kind, sc.Name(), k))
				}
				sp.keys = append(sp.keys, j)
			}
			for _, a := range sc.Args() {
				if j := slices.Index(valNames[:], a); j >= 0 {
					sp.args = append(sp.args, -1-j)
					continue
				}
				j := slices.Index(p.statics, a)
				if j < 0 {
					p.statics = append(p.statics, a) // from LockOptions.Values
					j = len(p.statics) - 1
				}
				sp.args = append(sp.args, j)
			}
			p.nKeys += len(sp.keys)
			p.scripts[i] = sp
		}
		if p.scripts[sTry].s == nil {
			p.scripts[sTry] = p.scripts[sAcquire]
		}
		p.forms = []string{layout.Memo}
		for _, k := range p.keys[2:] {
			p.forms = append(p.forms, s.Keys[k])
		}
		p.tagged = slices.Contains(s.Scripts.Acquire.Args(), "tag")
		p.wake, p.clients, p.channel = slices.Index(p.keys, "wake"), slices.Index(p.keys, "clients"), slices.Index(p.keys, "channel")
		if p.wake >= 0 {
			p.formsWake = append(slices.Clone(p.forms), s.Keys["wake"])
		}
	})
	return &s.plan
}

// Lock is one hash lock: a Spec on one name, with its options.
type Lock struct {
	c        *Client
	spec     *Spec
	plan     *specPlan
	name     string
	lease    time.Duration // the default lease of an acquisition
	leaseMs  string        // the same as the scripts take it
	fenced   bool
	handOver bool   // releases may hand the lock to this Client's waiters
	perOwner bool   // each owner waits on a channel of its own
	holdKey  string // what holds of it are recorded under: the name, and the tail if any
	tail     []string
	backoff  func() func() time.Duration
	table    []string // the key table
	keys     []string // each script's KEYS, at its plan's at
	values   []string // the value table
	channel  string   // where releases are announced (a prefix, PerOwner)
	wake     string   // this Client's wake channel, where releases hand over
	clients  string   // the clients record, where the spec has one ("clients")
}

// Init makes l the lock of spec on name, which it checks and maps (Client.Name). A primitive keeps
// its Lock in an allocation of its own.
func (l *Lock) Init(c *Client, spec *Spec, name string, o LockOptions) error {
	name, err := c.Name(spec.Kind, name)
	if err != nil {
		return err
	}
	if err := checkLease(o.Lease); err != nil {
		return errs.Errorf(spec.Kind, name, err)
	}
	p := spec.resolve()
	*l = Lock{c: c, spec: spec, plan: p, name: name, lease: o.Lease, leaseMs: c.leaseMs(o.Lease), fenced: o.Fenced,
		handOver: c.counts && o.Backoff == nil && p.tagged,
		perOwner: strings.HasSuffix(spec.Keys["channel"], ":"),
		holdKey:  name, tail: o.Tail, backoff: o.Backoff}
	if len(o.Tail) > 0 {
		l.holdKey = name + "\x00" + strings.Join(o.Tail, "\x00")
	}
	// One allocation for the key table, every script's KEYS and the value table, and one string for
	// all the side keys: a lock made per request costs little.
	nt := len(p.keys)
	buf := make([]string, nt+1+p.nKeys+len(p.statics))
	l.table, l.keys, l.values = buf[:nt:nt], buf[nt+1:nt+1+p.nKeys:nt+1+p.nKeys], buf[nt+1+p.nKeys:]
	l.table[0] = name
	if l.handOver && p.wake >= 0 {
		// The wake channel's prefix once more, then this Client's id: the Client's wake channel.
		c.Names().sideKeys(buf[1:nt+1], name, p.formsWake, c.id)
		l.wake = buf[nt]
	} else {
		c.Names().sideKeys(buf[1:nt], name, p.forms, "")
	}
	for _, sp := range p.scripts {
		for i, j := range sp.keys {
			l.keys[sp.at+i] = l.table[j]
		}
	}
	if p.clients >= 0 {
		l.clients = l.table[p.clients]
	}
	if p.channel >= 0 {
		l.channel = l.table[p.channel]
	}
	window := "0"
	if l.handOver {
		window = c.windowMs
	}
	l.values[0], l.values[1], l.values[2], l.values[3] = flag(!o.NonReentrant), flag(o.Fenced), c.Values.Publish, c.Values.NumSub
	l.values[4], l.values[5], l.values[6] = c.id, window, strconv.Itoa(len(o.Tail))
	for i, name := range p.statics[len(lockValNames):] {
		v, ok := o.Values[name]
		if !ok {
			return errs.Invalid(spec.Kind, name, "no value for the scripts' %q", name)
		}
		l.values[len(lockValNames)+i] = v
	}
	return nil
}

// Name returns the lock's name as the Client's name mapper maps it: its key in Redis.
func (l *Lock) Name() string { return l.name }

// call is one call's values.
type call [nVals]string

// keysOf returns script's KEYS.
func (l *Lock) keysOf(script int) []string {
	sp := &l.plan.scripts[script]
	return l.keys[sp.at : sp.at+len(sp.keys)]
}

// argsOf returns script's ARGV for the call v.
func (l *Lock) argsOf(script int, v *call) []string {
	return l.appendArgs(make([]string, 0, len(l.plan.scripts[script].args)+len(l.tail)), script, v)
}

// appendArgs appends script's ARGV for the call v to dst.
func (l *Lock) appendArgs(dst []string, script int, v *call) []string {
	for _, j := range l.plan.scripts[script].args {
		switch {
		case j < 0:
			dst = append(dst, v[-1-j])
		case j == vTail:
			dst = append(dst, l.tail...)
		default:
			dst = append(dst, l.values[j])
		}
	}
	return dst
}

// memo returns the key of the memo of the call with request id rid.
func (l *Lock) memo(rid string) string { return l.table[1] + rid }

// field returns owner's field in the hash.
func (l *Lock) field(owner int64) string {
	return send.Numbered([]string{l.c.id}, owner) + l.spec.Suffix
}

// Describe says what the lock is, for its holds' errors and events (see hold's Holds.Enter).
func (l *Lock) Describe() (kind, name string, shared bool) { return l.spec.Kind, l.name, l.spec.Shared }

// Field returns owner's field in the hash, and how the watchdog renews its hold (see Describe).
func (l *Lock) Field(owner int64) (string, hold.Renewal) {
	field := l.field(owner)
	return field, hold.Renewal{Script: l.plan.scripts[sRenew].s, Keys: l.keysOf(sRenew), By: l, Field: field}
}

// RenewArgs appends the renew script's ARGV for the hold of field to dst (hold.Renewal).
func (l *Lock) RenewArgs(dst []string, field string) []string {
	v := call{vField: field}
	return l.appendArgs(dst, sRenew, &v)
}

// Lock waits without bound: see TryLock.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) { return l.acquire(ctx, -1, l.lease) }

// TryLock acquires for ctx's owner (a fresh one when it has none), waiting at most wait (0: one
// try), and returns the hold's ctx.
func (l *Lock) TryLock(ctx context.Context, wait time.Duration) (context.Context, error) {
	if wait < 0 {
		return nil, errs.Invalid(l.spec.Kind, l.name, "negative wait %v", wait)
	}
	return l.acquire(ctx, wait, l.lease)
}

// LockFor is Lock with a lease of its own instead of the lock's: lease > 0 is fixed, 0 is the
// watchdog's.
func (l *Lock) LockFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	if err := checkLease(lease); err != nil {
		return nil, errs.Errorf(l.spec.Kind, l.name, err)
	}
	return l.acquire(ctx, -1, lease)
}

// TryLockFor is TryLock with a lease of its own (see LockFor).
func (l *Lock) TryLockFor(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if wait < 0 {
		return nil, errs.Invalid(l.spec.Kind, l.name, "negative wait %v", wait)
	}
	if err := checkLease(lease); err != nil {
		return nil, errs.Errorf(l.spec.Kind, l.name, err)
	}
	return l.acquire(ctx, wait, lease)
}

// checkLease refuses a lease that Redis cannot keep: negative, or below its millisecond resolution
// (0 is the watchdog's).
func checkLease(lease time.Duration) error {
	switch {
	case lease < 0:
		return fmt.Errorf("%w: negative lease %v", errs.ErrInvalidArgument, lease)
	case lease > 0 && lease < time.Millisecond:
		return fmt.Errorf("%w: lease %v is below Redis's millisecond resolution", errs.ErrInvalidArgument, lease)
	}
	return nil
}

// leaseArg returns lease as the scripts take it: the watchdog timeout for 0.
func (l *Lock) leaseArg(lease time.Duration) string {
	if lease == l.lease {
		return l.leaseMs
	}
	return l.c.leaseMs(lease)
}

func (l *Lock) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if ctx == nil {
		return nil, errs.Invalid(l.spec.Kind, l.name, "nil context")
	}
	owner, _ := hold.OwnerID(ctx) // 0 when ctx carries none
	held, err := l.hold(ctx, owner, wait, lease)
	if err != nil {
		return nil, errs.Errorf(l.spec.Kind, l.name, err)
	}
	return held, nil
}

// hold acquires a hold for owner with lease (0: the watchdog keeps it) through ctx, which may carry
// the owner's outer holds, and derives its ctx from ctx; owner 0: ctx carries none, and the hold's
// ctx carries the fresh one that Enter draws.
func (l *Lock) hold(ctx context.Context, owner int64, wait, lease time.Duration) (context.Context, error) {
	c := l.c
	a := &attempt{l: l}
	a.v[vLease] = l.leaseArg(lease)
	w := waiting.Wait{Weight: 1, Policy: l.spec.Policy, Tries: a, Again: a, Lease: lease, Hold: &a.acq}
	if w.Lease == 0 {
		w.Lease = c.cfg.WatchdogTimeout
	}
	// A spinning waiter listens to nothing: each try's wait is its policy's.
	waits := l.backoff == nil && wait != 0
	if waits {
		a.v[vWaits] = "1"
		if l.handOver {
			w.Grants, w.Wake = a, l.wake
			if l.plan.scripts[sList].s != nil {
				w.List = a
			}
		}
	}
	m := c.Observe(l.spec.Kind, l.name, &w)
	held, wait, err := c.holds.Enter(ctx, &a.acq, l, hold.ID{Key: l.holdKey, Owner: owner, Suffix: l.spec.Suffix}, wait, lease == 0)
	if err != nil {
		m.Done(err)
		return nil, err
	}
	field := a.acq.Field()
	a.v[vField], a.v[vOwner] = field, field[:len(field)-len(l.spec.Suffix)]
	if waits {
		w.Channel = l.channel
		if l.perOwner {
			w.Channel += a.v[vOwner]
		}
	}
	a.held = held
	a.v[vHeld] = strconv.Itoa(held)
	a.v[vRid] = c.RequestID()
	start, err := c.Run(ctx, wait, w, m)
	if err != nil {
		m.Done(err)
		a.acq.Abort(lease == 0)
		// An acquisition that Redis refused at every try has no record or place to leave.
		if waits && a.tried.Load() && l.plan.scripts[sLeave].s != nil && !errors.Is(err, errs.ErrClosed) &&
			(a.placed.Load() || !isRedisError(err)) {
			l.leave(send.Overtime, a.v[vField], a.v[vTag], a.v[vRid], "1")
		}
		return nil, err
	}
	if l.keptMemo(a.count, held) {
		c.DeleteLater(l.memo(a.v[vRid]))
	}
	heldCtx := a.acq.Commit(ctx, lease, start, owner == 0, a.v[vTag] != "")
	m.Done(nil)
	if l.fenced {
		return c.withToken(heldCtx, l.spec.Kind, l.name, a.token), nil
	}
	return heldCtx, nil
}

// attempt is one acquisition under way: its tries, and its record when it waits.
type attempt struct {
	acq    hold.Acq // what the hold records once acquired, in the same allocation
	l      *Lock
	held   int // what Redis counted for the owner before it
	v      call
	tried  atomic.Bool // a try was sent (one that runs apart may still be on its way)
	placed atomic.Bool // a try was answered without acquiring: it may have left a record, a place
	score  int64       // of the record the last failed try left: a hand-over must come after it
	count  int64       // the owner's count once acquired
	token  int64
	next   func() time.Duration // a spinning waiter's back-off policy, once a try failed
}

// Try sends one try: the first try's script until the waiter listens, the acquisition's after.
func (a *attempt) Try(ctx context.Context, within send.Bounds) (bool, time.Duration, error) {
	l, c := a.l, a.l.c
	a.tried.Store(true)
	script := sAcquire
	var sent time.Time
	if a.v[vTag] == "" {
		script = sTry
	} else if l.clients != "" {
		// A listing made less than half the linger ago still covers this wait's window and half the
		// linger after it: most tries do not list the Client again.
		sent = time.Now()
		a.v[vLinger] = ""
		if c.listAgain(l.clients, pubsub.Linger/2) {
			a.v[vLinger] = lingerMs
		}
	}
	var buf [16]string // Send copies what it keeps: the args stay on the stack
	reply, notReplicated := c.SendAcquiring(ctx, within, l.plan.scripts[script].s, l.keysOf(script), l.appendArgs(buf[:0], script, &a.v))
	t, err := readTry(reply)
	if err == nil && !t.acquired {
		a.placed.Store(true)
	}
	switch {
	case t.acquired:
		a.count, a.token = t.count, t.token
		if err == nil {
			err = notReplicated // Acquire gives back an acquisition that was not replicated
		}
	case t.recorded:
		a.score = t.score // the try that acquires removes the record
		if a.v[vLinger] != "" {
			c.listed(l.clients, sent, pubsub.Linger/2)
		}
	case l.backoff != nil && err == nil && !t.refused:
		if a.next == nil { // made at the first try that fails, as Redisson does: none uncontended
			a.next = l.backoff()
		}
		t.retryIn = a.next()
	case t.refused && l.spec.Refused != nil:
		err = l.spec.Refused
	case t.refused:
		err = fmt.Errorf("redisync: unexpected reply {3} from %s", l.plan.scripts[script].s.Name())
	}
	return t.acquired, t.retryIn, err
}

// Undo gives back what a try acquired. Sure of it, it releases what the try counted; unsure (the
// try's answer never came), it sends the release's Undo variant in the background, which gives back
// only what it finds the try took; the hold waits for it.
func (a *attempt) Undo(ctx context.Context, sure bool) {
	l := a.l
	v := call{vField: a.v[vField], vOwner: a.v[vOwner], vHeld: strconv.Itoa(a.held + 1), vRid: a.v[vRid], vLease: a.v[vLease]}
	if !sure {
		a.acq.Retain()
		l.c.Undo(l.plan.scripts[sRelease].s, l.keysOf(sRelease), l.argsOf(sRelease, &v), a.acq.Settle)
		return
	}
	// Sure of it, the give-back is sent within send.RetryBound, and not after: the acquisition may try
	// again at once (its try came too late to keep), and a try that finds the count this one made
	// takes it as its own, which a give-back still under way would then take back.
	v[vRid] = l.c.RequestID()
	l.sendRelease(ctx, &v, false)
	if l.keptMemo(a.count, a.held) {
		l.c.DeleteLater(l.memo(a.v[vRid]))
	}
}

// Again makes the next try a call of its own, under a new request id: the one before was given back
// (the replicas lagged), and its memo may still say that it acquired.
func (a *attempt) Again() { a.v[vRid] = a.l.c.RequestID() }

// keptMemo reports whether an acquisition that made the owner's count count, where the client
// counted held before it, kept a memo: where Redis counted otherwise than this client, and always
// for a lock over a list of values, whose counts are the values' (one owner's holds of overlapping
// lists share them), so that no count tells whether a lost send acquired.
func (l *Lock) keptMemo(count int64, held int) bool {
	return count != int64(held)+1 || len(l.tail) > 0
}

// Tag names the waiter's record, unique to this acquisition, and makes its tries from now on leave
// it: "<owner>:<n>:<grant>:<fenced>", where grant is the lease a release that hands the lock over
// gives ('0': a wake-up only, as for an acquisition that must wait for replicas, which only a try of
// its own does).
func (a *attempt) Tag() string {
	if a.v[vTag] == "" {
		l := a.l
		a.v[vGrant] = a.v[vLease]
		if l.c.AcksReplicas(l.name) {
			a.v[vGrant] = "0"
		}
		a.v[vTag] = send.Numbered([]string{a.v[vOwner]}, int64(l.c.tags.Add(1)), a.v[vGrant], flag(l.fenced))
	}
	return a.v[vTag]
}

// List (the wait's List, where the spec has a List script and releases hand over) lists this Client
// among the lock's clients before a waiter subscribes to the lock's channels, unless a listing made
// less than half the linger ago still stands. A release counts who listens on
// the lock's channel against the clients listed, and takes anyone beyond them for a Java waiter
// (rlock_wake.lua): a Client that listened before it was listed, for the round trip between its
// subscription and its next try, passed for one, and the release left the lock free for a Java
// turn that nobody took. Listed first, a Client never counts as more than itself. A record that Redis
// refuses to list it in (it holds other data) is the wait's error, before it subscribes; a listing
// that got no answer is made again by the next try.
func (a *attempt) List(ctx context.Context) error {
	l, c := a.l, a.l.c
	if !c.listAgain(l.clients, pubsub.Linger/2) {
		return nil
	}
	sent := time.Now()
	v := call{vLinger: lingerMs}
	var buf [4]string
	err := c.Send(ctx, l.plan.scripts[sList].s, l.keysOf(sList), l.appendArgs(buf[:0], sList, &v)).Error()
	switch {
	case err == nil:
		c.listed(l.clients, sent, pubsub.Linger/2)
	case isRedisError(err):
		return err
	}
	return nil
}

// Claim takes a hand-over made for the record the last try left.
func (a *attempt) Claim(token, score int64) bool {
	if score != a.score {
		return false
	}
	a.count, a.token = int64(a.held)+1, token
	return true
}

// Stray gives back a lock that a release handed to a waiter that is no longer there: on a channel of
// the owner's own, one of this owner's; on this Client's wake channel, the owner the tag names.
func (a *attempt) Stray(tag, _ string) {
	field := a.v[vField]
	if !a.l.perOwner {
		i := strings.IndexByte(tag, ':')
		j := strings.IndexByte(tag[i+1:], ':')
		if i < 0 || j < 0 {
			return
		}
		field = tag[:i+1+j]
	}
	a.l.leave(0, field, tag, "", "0")
}

// leave runs the leave script, a clean-up that it waits for at most wait: the waiter tagged tag of
// field's owner, acquiring as rid, gave up (queued) or left a hand-over behind; the script forgets its
// record, takes it out of the queue, and gives back a grant it did not take.
func (l *Lock) leave(wait time.Duration, field, tag, rid, queued string) {
	v := call{vField: field, vTag: tag, vRid: rid, vQueued: queued}
	l.c.CleanUp(wait, l.plan.scripts[sLeave].s, l.keysOf(sLeave), l.argsOf(sLeave, &v), nil)
}

// lockTry is an acquisition's reply.
type lockTry struct {
	acquired, recorded, refused bool
	count, token, score         int64
	retryIn                     time.Duration
}

// readTry reads an acquisition's reply; re-entry refused is ErrAlreadyHeld.
func readTry(reply rueidis.RedisResult) (lockTry, error) {
	if n, err := reply.AsInt64(); err == nil && n > 0 {
		return lockTry{acquired: true, count: n}, nil // acquired, no token: the count alone
	}
	arr, err := reply.ToArray() // read in place: AsIntSlice would allocate
	if err != nil {
		return lockTry{}, err
	}
	var res [3]int64
	if len(arr) == 0 || len(arr) > len(res) {
		return lockTry{}, fmt.Errorf("redisync: unexpected reply of %d elements", len(arr))
	}
	for i := range arr {
		if res[i], err = arr[i].AsInt64(); err != nil {
			return lockTry{}, err
		}
	}
	switch {
	case res[0] == 1 && len(arr) == 3:
		return lockTry{acquired: true, count: res[1], token: res[2]}, nil
	case res[0] == 2:
		return lockTry{}, errs.ErrAlreadyHeld
	case res[0] == 3:
		return lockTry{refused: true}, nil
	case res[0] == 0 && len(arr) >= 2:
		return lockTry{retryIn: retryIn(res[1]), score: res[2], recorded: len(arr) == 3}, nil
	}
	return lockTry{}, fmt.Errorf("redisync: unexpected reply %v", slices.Clone(res[:len(arr)])) // res stays on the stack
}

// Unlock releases the hold that ctx carries. A ctx without an owner holds nothing. It releases even
// when ctx has been cancelled.
func (l *Lock) Unlock(ctx context.Context) error {
	if ctx == nil {
		return errs.Invalid(l.spec.Kind, l.name, "nil context")
	}
	owner, ok := hold.OwnerID(ctx)
	if !ok {
		return errs.Errorf(l.spec.Kind, l.name, errs.ErrNotHeld)
	}
	var v call
	id := hold.ID{Key: l.holdKey, Owner: owner, Suffix: l.spec.Suffix}
	if a := l.c.holds.In(ctx, id); a != nil && a.Waited() {
		v[vWaits] = "1"
	}
	err := l.c.holds.Release(ctx, id, func(field string, held int, lease time.Duration, rid string, resent bool) (int64, error) {
		if field == "" {
			field, lease = l.field(owner), l.lease // a hold this client keeps no record of
		}
		v[vField], v[vOwner], v[vHeld], v[vRid] = field, field[:len(field)-len(l.spec.Suffix)], strconv.Itoa(held), rid
		v[vLease] = l.leaseArg(lease)
		return l.sendRelease(ctx, &v, resent)
	})
	if err != nil {
		return errs.Errorf(l.spec.Kind, l.name, err)
	}
	return nil
}

// sendRelease sends the release of the call v, or sends it again (resent), and returns how many
// acquisitions the owner keeps.
func (l *Lock) sendRelease(ctx context.Context, v *call, resent bool) (int64, error) {
	s := l.plan.scripts[sRelease].s
	if resent {
		s = s.Resent()
	}
	var buf [16]string
	res := l.c.Send(hold.Detach(ctx), s, l.keysOf(sRelease), l.appendArgs(buf[:0], sRelease, v))
	n, err := res.AsInt64()
	switch {
	case err != nil:
		return 0, err
	case n < 0:
		return 0, errs.ErrNotHeld
	}
	if held, _ := strconv.Atoi(v[vHeld]); n > 0 && n != int64(held)-1 {
		l.c.DeleteLater(l.memo(v[vRid])) // Redis counted otherwise than this client: a memo was kept
	}
	return n, nil
}

// ForceUnlock frees the lock whoever holds it, and reports whether it was held; this Client's holders
// lose it at once.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(l.spec.Kind, l.name, "nil context")
	}
	v := call{vRid: l.c.RequestID()}
	n, err := l.c.Send(ctx, l.plan.scripts[sForce].s, l.keysOf(sForce), l.argsOf(sForce, &v)).AsInt64()
	if err != nil {
		return false, errs.Errorf(l.spec.Kind, l.name, err)
	}
	l.c.DeleteLater(l.memo(v[vRid]))
	if n == 1 { // every hold on the name went with the hash, or on the values of the tail
		l.c.holds.Lose(l.name, l.tail, fmt.Errorf("%w: forced unlock", errs.ErrLost))
	}
	return n == 1, nil
}

// Extend makes the hold of ctx's owner last at least lease from now, exactly once (the script keeps
// its answer under the call's memo); it returns ErrNotHeld when the owner does not hold the lock.
// When ctx carries an acquisition of the lock with a fixed lease, the end of that lease, its ctx's
// deadline, moves on to match (never back); an acquisition whose lease already ended, or that was
// released, is ErrNotHeld without a command, and after Close ErrClosed, as every call answers then.
func (l *Lock) Extend(ctx context.Context, lease time.Duration) error {
	if ctx == nil {
		return errs.Invalid(l.spec.Kind, l.name, "nil context")
	}
	if lease < time.Millisecond {
		return errs.Invalid(l.spec.Kind, l.name, "lease %v: want at least 1ms", lease)
	}
	owner, ok := hold.OwnerID(ctx)
	if !ok {
		return errs.Errorf(l.spec.Kind, l.name, errs.ErrNotHeld)
	}
	if err := l.c.Closed(); err != nil {
		return errs.Errorf(l.spec.Kind, l.name, err) // Close ended every hold: none is extended
	}
	a := l.c.holds.In(ctx, hold.ID{Key: l.holdKey, Owner: owner, Suffix: l.spec.Suffix})
	if a != nil && !a.Extended(time.Time{}, 0) {
		return errs.Errorf(l.spec.Kind, l.name, fmt.Errorf("%w: its lease ended, or it was released", errs.ErrNotHeld))
	}
	field := l.field(owner)
	v := call{vField: field, vOwner: field[:len(field)-len(l.spec.Suffix)], vLease: ms(lease), vRid: l.c.RequestID()}
	start := time.Now()
	reply, notReplicated := l.c.SendAcquiring(hold.Detach(ctx), send.Bounds{}, l.plan.scripts[sExtend].s, l.keysOf(sExtend), l.argsOf(sExtend, &v))
	n, err := reply.AsInt64()
	if err != nil {
		return errs.Errorf(l.spec.Kind, l.name, err)
	}
	l.c.DeleteLater(l.memo(v[vRid]))
	switch {
	case n != 1:
		return errs.Errorf(l.spec.Kind, l.name, errs.ErrNotHeld)
	case notReplicated != nil:
		return errs.Errorf(l.spec.Kind, l.name, notReplicated) // Redis keeps it longer; the ctx keeps its end
	}
	if a != nil && !a.Extended(start.Add(lease-hold.Drift(lease)), lease) {
		return errs.Errorf(l.spec.Kind, l.name, fmt.Errorf("%w: its lease ended before the extension was answered", errs.ErrNotHeld))
	}
	return nil
}

// State reads the lock with its "state" script for ctx's owner (none: ""), and returns the reply:
// {pttl, the owner's hold count, ...}, pttl -2 when free. A name that holds other data is refused.
func (l *Lock) State(ctx context.Context) ([]int64, error) {
	if ctx == nil {
		return nil, errs.Invalid(l.spec.Kind, l.name, "nil context")
	}
	field := ""
	if owner, ok := hold.OwnerID(ctx); ok {
		field = l.field(owner)
	}
	return l.state(ctx, field)
}

// state is State for the owner whose field is field ("": none).
func (l *Lock) state(ctx context.Context, field string) ([]int64, error) {
	v := call{vField: field}
	res, err := l.c.QueryScript(ctx, l.plan.scripts[sState].s, l.keysOf(sState), l.argsOf(sState, &v)).AsIntSlice()
	if err == nil && len(res) < 2 {
		err = fmt.Errorf("redisync: unexpected reply %v", res)
	}
	if err != nil {
		return nil, errs.Errorf(l.spec.Kind, l.name, err)
	}
	return res, nil
}

// IsLocked reports whether anyone holds the lock: whether its hash exists.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	st, err := l.State(ctx)
	if err != nil {
		return false, err
	}
	return st[0] != -2, nil
}

// HoldCount returns how many times ctx's owner holds the lock (0 when it does not). ctx is used
// detached from its cancellation, as Unlock does: a hold's ctx ends when the hold does, which is
// when a caller most wants to ask.
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	if ctx == nil {
		return 0, errs.Invalid(l.spec.Kind, l.name, "nil context")
	}
	field := ""
	if owner, ok := hold.OwnerID(ctx); ok {
		field = l.field(owner)
	}
	return l.holdCount(ctx, field)
}

// IsHeld reports whether ctx's owner holds the lock (Redisson's isHeldByCurrentThread), as
// HoldCount counts.
func (l *Lock) IsHeld(ctx context.Context) (bool, error) {
	n, err := l.HoldCount(ctx)
	return n > 0, err
}

// IsHeldBy reports whether owner, an owner of this Client, holds the lock (Redisson's
// isHeldByThread, with an owner id for the thread id).
func (l *Lock) IsHeldBy(ctx context.Context, owner int64) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(l.spec.Kind, l.name, "nil context")
	}
	n, err := l.holdCount(ctx, l.field(owner))
	return n > 0, err
}

func (l *Lock) holdCount(ctx context.Context, field string) (int, error) {
	st, err := l.state(hold.Detach(ctx), field)
	if err != nil {
		return 0, err
	}
	return int(st[1]), nil
}

// TTL returns how long the lock stays held if nobody renews or releases it: 0 when it is free, -1
// when it has no expiry.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	st, err := l.State(ctx)
	if err != nil {
		return 0, err
	}
	return ttl(st[0]), nil
}

// ttl turns a PTTL answer into what the TTL methods return: 0 for a key that is gone (-2), -1 for
// one without expiry, else the time left.
func ttl(pttl int64) time.Duration {
	if pttl < 0 {
		return -time.Duration(pttl + 2)
	}
	return time.Duration(pttl) * time.Millisecond
}

// Token returns the fencing token of the acquisition ctx came from.
func (l *Lock) Token(ctx context.Context) (int64, bool) { return l.c.token(ctx, l.spec.Kind, l.name) }

type tokenKey struct {
	c          *Client
	kind, name string
}

// withToken returns ctx carrying the fencing token of the acquisition it stands for.
func (c *Client) withToken(ctx context.Context, kind, name string, token int64) context.Context {
	return context.WithValue(ctx, tokenKey{c, kind, name}, token)
}

// token returns the fencing token that withToken put in ctx (or in a parent of it).
func (c *Client) token(ctx context.Context, kind, name string) (int64, bool) {
	t, ok := ctx.Value(tokenKey{c, kind, name}).(int64)
	return t, ok
}

// lingerMs: a Client stays listed among a lock's clients this long after a waiter's window. A
// release counts who listens on the lock's channel against the clients listed, and takes anyone
// beyond them for a Java waiter (rlock_wake.lua): the listing must outlast the Client's listening,
// which goes on pubsub.Linger after its last waiter left, and up to half a Linger more (the notifier
// looks every half Linger), while that waiter may have listed the Client last half a Linger and a try
// before it left (listAgain). Half a Linger more spares a notifier or a try held up on a busy machine.
var lingerMs = strconv.FormatInt((pubsub.Linger * 5 / 2).Milliseconds(), 10)

// isRedisError reports whether err is Redis's answer (a refusal), which Redis acted on not at all.
func isRedisError(err error) bool {
	_, ok := rueidis.IsRedisErr(err)
	return ok
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// retryIn turns a PTTL that a script reported for the current holder into an Attempt's retryIn. PTTL
// rounds down, so the waiter waits one millisecond more than reported, or it would often try just
// before the expiry and then wait a whole recheck interval; a key without expiry (-1) is unknown.
func retryIn(pttl int64) time.Duration {
	if pttl < 0 {
		return -1
	}
	return time.Duration(pttl+1) * time.Millisecond
}
