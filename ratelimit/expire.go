package ratelimit

import (
	"context"
	"strconv"
	"time"

	"github.com/redisync/redisync/internal/errs"
)

// Expire makes the limiter end ttl from now, as Delete would end it (Redisson's expire): its hash,
// the Overall window and this Client's PerClient window, whichever exist, get the TTL; other Clients'
// PerClient windows keep theirs. It reports whether any of them exists. ttl must be at least a
// millisecond. Without a KeepAlive, acquisitions keep the limiter's end; with one, the next
// acquisition replaces it by the KeepAlive. A name that holds something else is refused with
// redisync.ErrWrongType and left unchanged.
func (l *Limiter) Expire(ctx context.Context, ttl time.Duration) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(kind, l.name, "nil context")
	}
	if ttl < time.Millisecond {
		return false, errs.Invalid(kind, l.name, "time to live %v: want at least 1ms", ttl)
	}
	return l.expire(ctx, strconv.FormatInt(ttl.Milliseconds(), 10))
}

// ClearExpire removes the expiry of the keys Expire covers (Redisson's clearExpire), and reports
// whether any of them had one. With a KeepAlive, the next acquisition gives them one again. A name
// that holds something else is refused with redisync.ErrWrongType and left unchanged.
func (l *Limiter) ClearExpire(ctx context.Context) (bool, error) {
	if ctx == nil {
		return false, errs.Invalid(kind, l.name, "nil context")
	}
	return l.expire(ctx, "")
}

// expire sends the expiry script: ms the TTL, or "" to clear it.
func (l *Limiter) expire(ctx context.Context, ms string) (bool, error) {
	rid := l.c.RequestID()
	n, err := l.c.Send(ctx, expireScript, l.keys[:], []string{ms, rid}).AsInt64()
	if err != nil {
		return false, errs.Errorf(kind, l.name, err)
	}
	l.c.DeleteLater(l.keys[5] + rid)
	return n == 1, nil
}

// TTL returns how long the limiter's hash has left before it expires (Redisson's remainTimeToLive,
// which reads the hash alone): -1 when it has no expiry, 0 when the limiter is not set. It changes
// nothing in Redis.
func (l *Limiter) TTL(ctx context.Context) (time.Duration, error) {
	res, err := l.read(ctx)
	if err != nil || len(res) == 0 {
		return 0, err
	}
	if pttl := res[5]; pttl < 0 {
		return -time.Duration(pttl + 2), nil // -2 (gone): 0; -1 (no expiry): -1
	}
	return time.Duration(res[5]) * time.Millisecond, nil
}
