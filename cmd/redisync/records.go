package main

import (
	"strconv"
	"strings"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/layout"
)

// How inspect and list read what the primitives keep in Redis (package layout says what each holds).
// Only some of a side record's entries are waiters; the others must never be shown or counted as
// such: a lock's or semaphore's record whose time has passed (its waiter has gone), a grant's mark
// (the waiter it was handed to holds now, or held since), the Java waiters' turns, the clients
// that listen, the grants and the memos. So a waiter is a record whose time is still ahead, and
// whose owner does not hold the object.

// liveFrom is the least score, in a ZRANGEBYSCORE or ZCOUNT, of a record whose time (microseconds,
// or milliseconds) is still ahead of now.
func liveFrom(now int64) string { return "(" + strconv.FormatInt(now, 10) }

// turnMarker reports whether a lock's record is one of the Java waiters' turns, not a waiter.
func turnMarker(member string) bool { return strings.HasPrefix(member, layout.Lock.Turn) }

// semaphoreRecord splits a semaphore's waiter record into the waiter ("<client id>:<attempt>") and
// the permits it wants; the whole member and 0 when it is not one.
func semaphoreRecord(member string) (who string, permits int64) {
	i := strings.LastIndexByte(member, ':')
	if i < 0 {
		return member, 0
	}
	n, err := strconv.ParseInt(member[i+1:], 10, 64)
	if err != nil {
		return member, 0
	}
	return member[:i], n
}

// fairGrant reports whether a fair lock's record is a grant's mark ("-<token> <tag>").
func fairGrant(record string) bool {
	token, _, ok := strings.Cut(record, " ")
	token, marked := strings.CutPrefix(token, layout.FairLock.GrantMark)
	if !ok || !marked || token == "" {
		return false
	}
	_, err := strconv.ParseUint(token, 10, 64)
	return err == nil
}

// isOwner reports whether s has the form of an owner, "<client id>:<number>".
func isOwner(s string) bool {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return false
	}
	_, err := strconv.ParseUint(s[i+1:], 10, 64)
	return err == nil
}

// groupFields reports whether fields (some or all of a hash's) have a group lock's layout.
func groupFields(fields map[string]string) bool {
	if len(fields) == 0 {
		return false
	}
	for k, v := range fields {
		switch {
		case strings.HasSuffix(k, layout.Group.Expire), strings.HasSuffix(k, layout.Group.Count):
			if _, err := strconv.ParseInt(v, 10, 64); err != nil || !strings.Contains(strings.TrimSuffix(strings.TrimSuffix(k, layout.Group.Expire), layout.Group.Count), ":") {
				return false
			}
		case strings.Contains(k, ":") || !isOwner(v):
			return false
		}
	}
	return true
}

// groupHold is one value of a group held by its owner.
type groupHold struct {
	field, owner string
	count        int64
	expires      int64 // ms, absolute
}

// groupHolds returns the values of a group, among fields, that are held at now (ms): those whose
// owner's expiry is not past. A value whose owner's lease ended stays in the hash until it is
// taken over or released, held by nobody. read is how many values fields hold whole, held or not.
func groupHolds(fields map[string]string, now int64) (held []groupHold, read int) {
	for k, owner := range fields {
		if strings.Contains(k, ":") {
			continue
		}
		e, err := strconv.ParseInt(fields[k+":"+owner+layout.Group.Expire], 10, 64)
		if err != nil {
			continue // its other fields were not read
		}
		read++
		if e < now {
			continue
		}
		n, _ := strconv.ParseInt(fields[k+":"+owner+layout.Group.Count], 10, 64)
		held = append(held, groupHold{field: k, owner: owner, count: n, expires: e})
	}
	return held, read
}

// rwMode reports whether v is a read-write lock's mode.
func rwMode(v string) bool { return v == layout.RWLock.Read || v == layout.RWLock.Write }

// readLease returns the key of the lease of owner's k-th read hold of the read-write lock name.
func readLease(names core.Names, name, owner string, k int64) string {
	return names.Key(layout.RWLock.Leases, name) + owner + layout.RWLock.LeaseInfix + strconv.FormatInt(k, 10)
}

// latchChannel returns the channel of the countdown latch name.
func latchChannel(names core.Names, name string) string {
	return names.Braced(layout.Latch.Channel, name, layout.Latch.Fallback)
}
