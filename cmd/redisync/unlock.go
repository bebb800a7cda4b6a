package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

const unlockHeader = `Usage: redisync unlock --force [--yes] [--json] NAME

Breaks the lock NAME whoever holds it: for an operator, when a holder is stuck or gone and its
lease is long. NAME may be a lock, a fair lock, a read-write lock (in the mode it is held in) or a
group lock (every value held). Its waiters are woken as by a release (a lock's first waiter may be
handed it at once). The holders are not asked: a 'redisync lock' that held it notices at its next
renewal, within a third of its watchdog timeout, and stops its COMMAND (status 76); a service's
hold ends with redisync.ErrLost then.

On a terminal, it shows the lock and asks before it breaks it (--yes does not ask; without a
terminal, it does not ask either). It says whether the lock was held. A NAME that holds something
else (a semaphore, a latch, a rate limiter, an application's key) is refused, and left as it was.
`

const unlockFooter = `
Exit status: 0 when the lock was broken, or was not held (it says which); 1 when the question was
not answered yes; 64 for bad flags or arguments (no --force); 65 when NAME holds something that is
not a lock; 69 when Redis is unreachable or failing; 77 when Redis refuses (NOPERM).

Examples:
  redisync unlock --force nightly-report
  redisync unlock --force --yes --json --addr redis:6379 deploy | jq .was_held
`

// unlocked is what unlock --json prints.
type unlocked struct {
	Name    string        `json:"name"`
	Kind    string        `json:"kind"` // as inspect's, "none" when nothing is stored
	WasHeld bool          `json:"was_held"`
	Holders []holderState `json:"holders,omitempty"` // as inspect showed them before
}

// cmdUnlock breaks a lock whoever holds it.
func cmdUnlock(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("unlock", unlockHeader, unlockFooter, stdout, stderr)
	force := cmd.fs.Bool("force", false, "break the lock whoever holds it (required: unlock does nothing else)")
	yes := cmd.fs.Bool("yes", false, "do not ask on a terminal")
	cmd.fs.BoolVar(yes, "y", false, "short for --yes")
	asJSON := cmd.fs.Bool("json", false, `print {"name", "kind", "was_held", "holders"}`)
	var conn connFlags
	conn.register(cmd.fs)
	name, code := cmd.parseName(args)
	if code >= 0 {
		return code
	}
	if !*force {
		return cmd.usageError("unlock breaks a lock whoever holds it: say so with --force")
	}
	if err := checkName(name); err != nil {
		return cmd.usageError("%v", err)
	}
	c, code := conn.connect(cmd, -1)
	if code >= 0 {
		return code
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, _ := core.Of(c).Name("", name)
	st, err := inspect(ctx, c.Redis(), key)
	if err != nil {
		return redisError(cmd, err)
	}
	if code := unlockable(cmd, name, st); code >= 0 {
		return code
	}
	out := unlocked{Name: name, Kind: st.Kind, Holders: st.Holders}
	if len(st.Holders) > 0 {
		if !*yes && isTerminal(int(os.Stdin.Fd())) && !confirm(cmd, st) {
			fmt.Fprintf(cmd.stderr, "redisync unlock: %q: nothing changed\n", name)
			return exitFailure
		}
		// The question may have waited: the work gets a bound of its own.
		work, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out.WasHeld, err = forceUnlock(work, c, name, st); err != nil {
			return redisError(cmd, err)
		}
	}
	out.print(cmd.stdout, *asJSON)
	return exitOK
}

// unlockable returns exitDataErr, saying why, unless st, read under name, is a lock or nothing.
func unlockable(cmd *command, name string, st *state) int {
	switch {
	case st.Other != nil:
		fmt.Fprintf(cmd.stderr, "redisync unlock: %q holds a %s that is not a lock; nothing changed\n", name, st.Other.Type)
		return exitDataErr
	case st.Kind != "none" && !strings.HasSuffix(st.Kind, "lock"):
		fmt.Fprintf(cmd.stderr, "redisync unlock: %q is a %s, not a lock; nothing changed\n", name, st.Kind)
		return exitDataErr
	}
	return -1
}

// print says what the unlock did, and to whom.
func (out *unlocked) print(w io.Writer, asJSON bool) {
	if asJSON {
		printJSON(w, out)
		return
	}
	if !out.WasHeld {
		fmt.Fprintf(w, "%s: not held; nothing changed\n", out.Name)
		return
	}
	owners := make([]string, len(out.Holders))
	for i, h := range out.Holders {
		owners[i] = escape(h.Owner)
		if h.Who != nil {
			owners[i] += " (" + escape(h.Who.String()) + ")"
		}
	}
	fmt.Fprintf(w, "%s: was held by %s; unlocked\n", out.Name, strings.Join(owners, ", "))
}

// confirm shows st on stderr and asks whether to break it; a line "y" or "yes" on stdin says so.
func confirm(cmd *command, st *state) bool {
	st.print(cmd.stderr)
	fmt.Fprint(cmd.stderr, "Break this lock? Its holders lose it. [y/N] ")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// forceUnlock frees the lock called name, of the kind and mode st found, with the library's forced
// release of that kind (which wakes its waiters), and reports whether it was held.
func forceUnlock(ctx context.Context, c *redisync.Client, name string, st *state) (bool, error) {
	switch st.Kind {
	case "fair lock":
		l, err := fairlock.New(c, name)
		if err != nil {
			return false, err
		}
		return l.ForceUnlock(ctx)
	case "read-write lock":
		rw, err := rwlock.New(c, name)
		if err != nil {
			return false, err
		}
		if st.Mode == layout.RWLock.Write {
			return rw.WriteLock().ForceUnlock(ctx)
		}
		return rw.ReadLock().ForceUnlock(ctx)
	case "group lock":
		var fields []string
		for _, h := range st.Holders {
			for _, v := range h.Values {
				fields = append(fields, v.Field)
			}
		}
		var l core.Lock
		if err := l.Init(core.Of(c), groupSpec, name, core.LockOptions{Tail: fields}); err != nil {
			return false, err
		}
		return l.ForceUnlock(ctx)
	}
	l, err := rlock.New(c, name)
	if err != nil {
		return false, err
	}
	return l.ForceUnlock(ctx)
}

// groupSpec is multilock.Group's, for a forced release of values known by their fields: a Group is
// built from the values, which the group's hash does not hold.
var groupSpec = &core.Spec{
	Kind: "group lock",
	Keys: map[string]string{"channel": layout.Group.Channel},
	Scripts: core.Scripts{
		Acquire: lua.Load("grouplock_acquire.lua"),
		Force:   lua.Load("grouplock_force_release.lua"),
	},
	Policy: pubsub.WakeAll,
}
