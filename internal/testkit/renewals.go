package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// AwaitRenewals waits until the expiry of key has been pushed later n times: a PTTL that rises between
// two reads can only come from a renewal (PEXPIRE), since time only lowers it. It fails the test if the
// key is gone or loses its expiry, or if 30 s pass first. Renewals that fall between two reads count as
// one, which only makes the wait longer.
func AwaitRenewals(t testing.TB, rdb rueidis.Client, key string, n int) {
	t.Helper()
	seen := 0
	pttl := func() int64 {
		t.Helper()
		ms, err := rdb.Do(context.Background(), rdb.B().Pttl().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatalf("PTTL %s: %v", key, err)
		}
		if ms < 0 {
			t.Fatalf("PTTL %s = %d after %d of %d renewals: the key is gone or has no expiry", key, ms, seen, n)
		}
		return ms
	}
	last := pttl()
	Eventually(t, 30*time.Second, func() error {
		ms := pttl()
		if ms > last {
			seen++
		}
		last = ms
		if seen < n {
			return fmt.Errorf("%s renewed %d times, want %d", key, seen, n)
		}
		return nil
	})
}
