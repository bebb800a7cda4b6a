package errs

import (
	"errors"
	"strings"
	"testing"
)

// TestRefusalOf: Redis's refusals and the scripts' become the package's sentinels, with a sentence
// that names what was found (and which side key) and never the script's internals; the original
// error stays reachable.
func TestRefusalOf(t *testing.T) {
	for _, c := range []struct {
		msg, want string
		sentinel  error
	}{
		{"WRONGTYPE redisync:string stock", "redisync: the name holds other data: a string", ErrWrongType},
		{"WRONGTYPE redisync:group stock", "redisync: the name holds other data: a group lock", ErrWrongType},
		{"WRONGTYPE redisync:zset redisync_lock_waiters:{stock}", `redisync: the name holds other data: a sorted set under its side key "redisync_lock_waiters:{stock}"`, ErrWrongType},
		{"WRONGTYPE Operation against a key holding the wrong kind of value script: 3b64a469b71295f66c36745e2afb6594ac9aaed3, on @user_script:1.", "redisync: the name holds other data: a key of another type", ErrWrongType},
		{"ERR value is not an integer or out of range script: 2bab3b661081db58bd2341920e0ba7cf5dc77b25, on @user_script:1.", "redisync: the name holds other data: a value that is not a number", ErrWrongType},
		{"NOPERM User u has no permissions to run the 'evalsha' command", "redisync: not permitted by Redis: the user's ACL does not allow a command or key this call needs", ErrNoPermission},
		{"WRONGPASS invalid username-password pair or user is disabled.", "redisync: not permitted by Redis: wrong user or password", ErrNoPermission},
		{"OOM command not allowed when used memory > 'maxmemory'.", "redisync: refused by Redis: Redis is out of memory (maxmemory) and takes no writes", ErrRefused},
		{"READONLY You can't write against a read only replica.", "redisync: refused by Redis: the server is a read-only replica", ErrRefused},
		{"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.", "redisync: refused by Redis: Redis is busy running a script", ErrRefused},
		{"ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1.", "redisync: refused by Redis: Redis answered with an error (ERR)", ErrRefused},
	} {
		cause := errors.New(c.msg)
		err := Errorf("lock", "stock", refusalOf("stock", c.msg, cause))
		if got := err.Error(); got != `lock "stock": `+c.want {
			t.Errorf("%s:\n got %s\nwant lock \"stock\": %s", c.msg, got, c.want)
		}
		if !errors.Is(err, c.sentinel) || !errors.Is(err, cause) {
			t.Errorf("%s: %v does not match its sentinel and its cause", c.msg, err)
		}
		if strings.Contains(err.Error(), "script") && !strings.Contains(c.want, "script") {
			t.Errorf("%s: %v shows the script", c.msg, err)
		}
	}
}
