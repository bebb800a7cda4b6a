package send

import (
	"testing"

	"github.com/redisync/redisync/lua"
)

// A give-back is sent for undoBound at most: within the life of the memo it reads, which tells it
// what the call it gives back did.
func TestUndoWithinMemoLife(t *testing.T) {
	if undoBound >= lua.MemoTTL {
		t.Fatalf("give-backs are sent for %v, memos live %v", undoBound, lua.MemoTTL)
	}
}
