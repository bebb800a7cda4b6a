package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/redisync/redisync/internal/redistest"
)

// processCPU returns the CPU this process has used, user and system, in microseconds: the
// libraries' own, since the server is a process of its own.
func processCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e3
}

// clientCPU prints, for each library, the client's CPU per uncontended Lock+Unlock pair on a fresh
// key (B1's loop), in rounds that take the libraries in turn.
func clientCPU(w io.Writer, pairs, rounds int) error {
	srv, err := redistest.NewServer(redistest.Config{})
	if err != nil {
		return err
	}
	defer srv.Close()
	d := standalone(srv)
	var n atomic.Int64
	libs := []struct {
		name string
		open func() (locker, error)
	}{
		{"floor", func() (locker, error) { return openFloor(d, &n) }},
		{"redisync", func() (locker, error) { return openRedisync(d, &n) }},
		{"rueidislock", func() (locker, error) { return openRueidislock(d, &n) }},
		{"bsm", func() (locker, error) { return openBsm(d, &n) }},
	}
	ctx := context.Background()
	fmt.Fprintf(w, "client CPU per uncontended pair, us (user+system of this process, %d pairs a round)\n", pairs)
	per := make([][]float64, len(libs))
	for r := range rounds {
		for i, lib := range libs {
			l, err := lib.open()
			if err != nil {
				return fmt.Errorf("%s: %w", lib.name, err)
			}
			run := func(k int, prefix string) error {
				for j := range k {
					unlock, err := l.Lock(ctx, prefix+strconv.Itoa(j))
					if err == nil {
						err = unlock(ctx)
					}
					if err != nil {
						return fmt.Errorf("%s: %w", lib.name, err)
					}
				}
				return nil
			}
			err = run(pairs/10, fmt.Sprintf("cpu-warm-%d-%d-", r, i))
			before := processCPU()
			if err == nil {
				err = run(pairs, fmt.Sprintf("cpu-%d-%d-", r, i))
			}
			per[i] = append(per[i], (processCPU()-before)/float64(pairs))
			l.Close()
			if err != nil {
				return err
			}
		}
	}
	for i, lib := range libs {
		fmt.Fprintf(w, "%-12s", lib.name)
		for _, us := range per[i] {
			fmt.Fprintf(w, " %7.1f", us)
		}
		fmt.Fprintln(w)
	}
	return nil
}
