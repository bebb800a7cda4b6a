package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// watchInspect is 'inspect --watch': it reads name every interval until interrupted (SIGINT,
// SIGTERM), and prints the view, with the time, each time holders, waiters, queue, mode, counts or
// the last fencing token change (a hand-over shows as a new holder and a new token). TTLs, leases,
// deadlines and expiries that only count down, or that a renewal or a waiter's new try moves on,
// print nothing new. With asJSON every view is one line of JSON.
func watchInspect(cmd *command, rdb rueidis.Client, name string, asJSON bool, interval time.Duration) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := watch(ctx, rdb, name, asJSON, interval, cmd.stdout); err != nil {
		return redisError(cmd, err)
	}
	return exitOK
}

// watch prints name's view whenever it changes, until ctx ends. A failed read ends it only if it is
// the first: later ones are reported in the output, and reading goes on.
func watch(ctx context.Context, rdb rueidis.Client, name string, asJSON bool, interval time.Duration, w io.Writer) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	last, first := "", true
	for {
		readCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		st, err := inspect(readCtx, rdb, name)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && first:
			return err
		case err != nil:
			if msg := "error: " + err.Error(); msg != last {
				fmt.Fprintf(w, "-- %s %s\n", time.Now().Format("15:04:05.000"), msg)
				last = msg
			}
		default:
			if sig := signature(st); sig != last {
				last = sig
				if asJSON {
					json.NewEncoder(w).Encode(st)
				} else {
					fmt.Fprintf(w, "-- %s\n", time.Now().Format("15:04:05.000"))
					st.print(w)
				}
			}
		}
		first = false
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// signature is st without what only counts down: TTLs, deadlines, leases and expiries. A waiter
// trying again (its deadline moves on) is no change either; one that comes or goes is.
func signature(st *state) string {
	s := *st
	s.TTLms = nil
	s.Holders = append([]holderState(nil), st.Holders...)
	for i, h := range s.Holders {
		s.Holders[i].Leases = nil
		s.Holders[i].Values = append([]groupValue(nil), h.Values...)
		for j := range s.Holders[i].Values {
			s.Holders[i].Values[j].ExpiresMs = 0
		}
	}
	s.Queue = stripDeadlines(st.Queue)
	s.WaitingWriters = stripDeadlines(st.WaitingWriters)
	s.Waiters = stripDeadlines(st.Waiters)
	s.Permits = append([]permit(nil), st.Permits...)
	for i := range s.Permits {
		s.Permits[i].Expires = 0
	}
	b, _ := json.Marshal(&s)
	return string(b)
}

func stripDeadlines(ws []waiter) []waiter {
	out := make([]waiter, len(ws))
	for i, w := range ws {
		out[i] = waiter{Owner: w.Owner, Permits: w.Permits}
	}
	return out
}
