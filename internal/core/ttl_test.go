package core

import (
	"testing"
	"time"
)

// TestTTL: the locks' TTL methods report a key that is gone as 0 and one without expiry as -1.
func TestTTL(t *testing.T) {
	for pttl, want := range map[int64]time.Duration{-2: 0, -1: -1, 0: 0, 1500: 1500 * time.Millisecond} {
		if got := ttl(pttl); got != want {
			t.Errorf("ttl(%d) = %v, want %v", pttl, got, want)
		}
	}
}
