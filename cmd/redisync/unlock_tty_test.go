//go:build linux

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/testkit"
	"github.com/redisync/redisync/rlock"
)

// TestUnlockForceAsks: on a terminal, unlock --force shows the lock and breaks it only when the
// answer is yes.
func TestUnlockForceAsks(t *testing.T) {
	t.Parallel()
	tg := testkit.Own(t)
	c := tg.Client(t, redisync.WithWatchdogTimeout(3*time.Second)) // it learns of the loss within a second
	l := must(rlock.New(c, "ask-lock"))
	held := must(l.Lock(context.Background()))
	for _, answer := range []string{"n", "yes"} {
		term := openPTY(t)
		p := tool(t, tg.Addrs[0], "unlock", "--force", "ask-lock")
		term.attach(p.cmd)
		p.start()
		waitFor(t, 10*time.Second, "the question", func() bool { return strings.Contains(term.output(), "[y/N]") })
		if out := term.output(); !strings.Contains(out, "holder "+owner(c, held)) {
			t.Errorf("the question does not show the holder:\n%s", out)
		}
		term.master.Write([]byte(answer + "\n"))
		code := p.wait(10 * time.Second)
		// The terminal's reader may still be copying the tool's last line when the tool has exited.
		want := "nothing changed"
		if answer != "n" {
			want = "ask-lock: was held by " + owner(c, held) + "; unlocked"
		}
		waitFor(t, 10*time.Second, "the answer's last line "+want, func() bool { return strings.Contains(term.output(), want) })
		switch answer {
		case "n":
			if code != exitFailure || held.Err() != nil {
				t.Errorf("answered no: exit %d, lock held %v\n%s", code, held.Err() == nil, term.output())
			}
		default:
			if code != 0 {
				t.Errorf("answered yes: exit %d\n%s", code, term.output())
			}
		}
	}
	if testkit.DoString(t, tg.Redis(t), "EXISTS", "ask-lock") != "0" {
		t.Error("the lock is still held")
	}
	select {
	case <-held.Done():
	case <-time.After(time.Minute):
		t.Error("the holder was not told")
	}
}
