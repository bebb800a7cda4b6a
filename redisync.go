// Package redisync provides Redisson-style distributed synchronizers on Redis for Go: a reentrant lock
// with a lease watchdog (package rlock), a fair lock (fairlock), a read-write lock (rwlock), semaphores
// (semaphore), a countdown latch (countdown), a rate limiter (ratelimit), and MultiLock and RedLock
// (multilock).
//
// Every primitive keeps Redisson's data layout in Redis, so Go and Java processes can share a lock
// while a service is being ported. Waiting is driven by Pub/Sub release notifications, not polling.
// Standalone Redis, Sentinel and Redis Cluster are supported through rueidis.
//
// A Client is the connection all primitives share. The owner of a lock travels in the context: the
// ctx a Lock returns carries it, and code that passes that ctx down may lock again (re-entry) and
// unlock. A ctx without an owner gets a fresh one at Lock, so two goroutines that start from the same
// plain ctx exclude each other; goroutines fanned out from one held ctx take turns, since only the
// innermost hold re-enters, and Unlock releases exactly the hold its ctx carries.
//
// # Replica acknowledgement
//
// By default a Client has every acquisition, renewal and fencing increment on a master with replicas
// acknowledged by the first replica (WAIT 1, DefaultReplicaAckTimeout, no WAITAOF; see
// WithReplicaAck, and WithoutReplicaAck to turn it off). Why the first, and not every replica (as
// Redisson does) or a majority:
//
//   - A failover loses a lock when the replica it promotes lacks the acquisition. Sentinel and Redis
//     Cluster promote the replica that received the most of the master's stream; once one replica
//     acknowledged the acquisition, that one has it too. Waiting for more only helps when the replica
//     that acknowledged is lost with the master, or may not be promoted (replica-priority 0, a link
//     down for too long).
//   - A WAIT for n replicas lasts as long as the n-th fastest of them. Waiting for every replica, one
//     that lags (a resync, a paused or slow host) makes every acquisition wait the whole timeout; with
//     one replica in all, it stops all locking. Waiting for the first, a lag costs nothing while any
//     replica keeps up. A majority lies between: it rides out a lagging minority and covers the loss
//     of one replica that acknowledged.
//
// When no replica acknowledges in time, the acquisition is given back and a blocking call tries
// again until its bound ends (Redisson gives back and retries too, but retryAttempts times, 1 to 2 s
// apart, whatever the caller's wait): only a call whose bound ends first, or a single try, returns
// ErrNotReplicated. WithReplicaAck(n, timeout) asks for n replicas, AllReplicas for Redisson's
// behaviour.
//
// Where the master has no replicas that costs nothing: no WAIT is sent, and the replica count is
// asked with INFO once per master, then in the background every few seconds while the Client
// acquires, never per lock. Where it has replicas, each acquisition, renewal and fencing increment
// costs the replication round trip (typically well under a millisecond on a LAN, up to the timeout
// while every replica lags), and a release no longer hands the object to a waiter directly: the
// waiter is woken and acquires with a try of its own, one round trip more per hand-over.
package redisync

import (
	"context"

	"github.com/redisync/redisync/internal/hold"
)

// WithOwner returns a ctx with a new owner. Locks taken with it, and with every ctx derived from it,
// belong to that owner (one field in Redis); its goroutines still take turns at an exclusive lock,
// and only the ctx of the innermost hold re-enters.
func WithOwner(ctx context.Context) context.Context {
	return hold.WithNewOwner(ctx)
}

// OwnerID returns the owner that ctx carries, if any (Redisson's thread id: the second half of the
// owner field in Redis).
func OwnerID(ctx context.Context) (int64, bool) { return hold.OwnerID(ctx) }
