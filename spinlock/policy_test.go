package spinlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type zeroes struct{}

func (zeroes) Sleeps() func() time.Duration { return func() time.Duration { return 0 } }

// A policy of one's own that says 0 or less sleeps a millisecond: never a tight loop on the server.
func TestOwnPolicyNeverSpinsTight(t *testing.T) {
	mk, err := policy(zeroes{})
	require.NoError(t, err)
	next := mk()
	for range 3 {
		require.Equal(t, time.Millisecond, next())
	}
}
