package main

import (
	"strconv"
	"strings"
)

// How inspect and list read the side records the library keeps beside a primitive (lua/ writes
// them). Only some of a record's entries are waiters; the others must never be shown or counted as
// such:
//
//   - redisync_lock_waiters:{N} (sorted set, rlock_wake.lua, record.lua): a waiter's record is the
//     member "<client id>:<owner id>:<attempt>:<lease>:<fenced>" scored by the time in microseconds
//     by which it will have tried again. A score in the past is a waiter that has gone. A score of 0
//     or less is a grant's mark: a release handed the lock to that waiter (minus its fencing token),
//     which holds it now or held it since. The members "~java" and "~owed" are the Java waiters'
//     turns, scored by a time, and no waiter.
//   - redisync_lock_clients:{N}, redisync_semaphore_clients:{N} (sorted sets): the Clients that listen
//     for hand-overs, scored by until when (ms). No waiter.
//   - redisync_fair_waiters:{N} (hash, fairlock_wake.lua): owner -> "<score us> <tag> <lease>
//     <fenced>", the time of the waiter's last try, or "-<token> <tag>", a grant's mark: the owner
//     was handed the lock and holds it until its release removes the mark. The fair lock's waiters
//     are its queue (redisson_lock_queue:{N}), each with its deadline (redisson_lock_timeout:{N}, ms).
//   - redisync_semaphore_waiters:{N} (sorted set, semaphore_wake.lua): "<client id>:<attempt>:<permits
//     wanted>", scored as a lock's records; a hand-over moves the record to
//     redisync_semaphore_grants:{N} (hash: member -> score), which its client deletes once told.
//   - redisync_rwlock_writers:{N} (sorted set): a waiting writer "<owner>:write", scored by until when
//     (ms) it keeps new readers out.
//   - redisync_once:{N}:<request id> (strings): a call's memo, read by a call sent again. No waiter.
//
// So a waiter is a record whose time is still ahead, and whose owner does not hold the object.

// liveFrom is the least score, in a ZRANGEBYSCORE or ZCOUNT, of a record whose time (microseconds,
// or milliseconds) is still ahead of now.
func liveFrom(now int64) string { return "(" + strconv.FormatInt(now, 10) }

// turnMarker reports whether a lock's record is one of the Java waiters' turns ("~java", "~owed"),
// not a waiter.
func turnMarker(member string) bool { return strings.HasPrefix(member, "~") }

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
	if !ok || len(token) < 2 || token[0] != '-' {
		return false
	}
	_, err := strconv.ParseUint(token[1:], 10, 64)
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

// Group locks (multilock.Group, grouplock.lua) keep Redisson's layout: one hash per group, and for
// each value held the fields "<value>" (its owner), "<value>:<owner>:expire_time" (until when, ms)
// and "<value>:<owner>:lock_count". <value> is a hash of the value, without colons.
const (
	groupExpire = ":expire_time"
	groupCount  = ":lock_count"
)

// groupFields reports whether fields (some or all of a hash's) have a group lock's layout.
func groupFields(fields map[string]string) bool {
	if len(fields) == 0 {
		return false
	}
	for k, v := range fields {
		switch {
		case strings.HasSuffix(k, groupExpire), strings.HasSuffix(k, groupCount):
			if _, err := strconv.ParseInt(v, 10, 64); err != nil || !strings.Contains(strings.TrimSuffix(strings.TrimSuffix(k, groupExpire), groupCount), ":") {
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
// owner's expire_time is not past. A value whose owner's lease ended stays in the hash until it is
// taken over or released, held by nobody. read is how many values fields hold whole, held or not.
func groupHolds(fields map[string]string, now int64) (held []groupHold, read int) {
	for k, owner := range fields {
		if strings.Contains(k, ":") {
			continue
		}
		e, err := strconv.ParseInt(fields[k+":"+owner+groupExpire], 10, 64)
		if err != nil {
			continue // its other fields were not read
		}
		read++
		if e < now {
			continue
		}
		n, _ := strconv.ParseInt(fields[k+":"+owner+groupCount], 10, 64)
		held = append(held, groupHold{field: k, owner: owner, count: n, expires: e})
	}
	return held, read
}
