package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/errs"
)

// TestStatusOf: the exit status follows the library's sentinels (errors.Is), whatever the words of
// the message: a refusal without Redis's code in its text, and a message that merely mentions one.
func TestStatusOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{errs.Errorf("lock", "stock", redisync.ErrWrongType), exitDataErr},
		{errs.Errorf("lock", "stock", redisync.ErrNoPermission), exitNoPerm},
		{errs.Errorf("lock", "stock", fmt.Errorf("%w: waited 1s", redisync.ErrNotAcquired)), exitNotAcquired},
		{errs.Errorf("lock", "stock", redisync.ErrRefused), exitUnavailable},
		{errors.New("dial tcp: the NOPERM-proxy host is not a number"), exitUnavailable},
	} {
		if got := statusOf(c.err); got != c.want {
			t.Errorf("statusOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
