package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/testkit"
)

// TestRate: the tool runs COMMAND only when the limiter grants a permit; --wait 0 and a wait the
// limiter cannot meet exit 75 at once; inspect shows the rate and the permits left.
func TestRate(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		addrs := strings.Join(tg.Addrs, ",")
		name := "rate-cli-" + tg.Name
		for i := range 2 {
			p := tool(t, addrs, "rate", "--rate", "2/h", name, "--", "sh", "-c", "echo ran; exit 3")
			if code := p.run(); code != 3 || p.stdout.String() != "ran\n" {
				t.Fatalf("run %d: %v", i, p)
			}
		}
		for _, wait := range [][]string{{"--wait", "0"}, {"--wait", "10m"}, {"-w", "1"}, {"-n"}} {
			p := tool(t, addrs, append(append([]string{"rate", "--rate", "2/h"}, wait...), name, "--", "sh", "-c", "echo ran")...)
			if code := p.run(); code != exitNotAcquired || p.stdout.Len() != 0 {
				t.Fatalf("%q over the rate: %v", wait, p)
			}
		}
		if p := tool(t, addrs, "rate", "--rate", "2/h", "-n", "-E", "0", name, "--", "sh", "-c", "echo ran"); p.run() != 0 || p.stdout.Len() != 0 {
			t.Fatalf("-E 0 over the rate: %v", p)
		}
		st, text := inspectJSON(t, tg, name)
		rs := st.RateLimiter
		if st.Kind != "rate limiter" || rs == nil || rs.Rate != 2 || rs.IntervalMs != time.Hour.Milliseconds() ||
			rs.Available == nil || *rs.Available != 0 || rs.Grants != 2 || rs.Type != "overall" {
			t.Errorf("inspect: %+v %+v", st, rs)
		}
		if !strings.Contains(text, "rate: 2 per 1h0m0s (overall)") || !strings.Contains(text, "permits left: 0 (2 grants in the window)") {
			t.Errorf("inspect text:\n%s", text)
		}
		testkit.Do(t, tg.Redis(t), "DEL", name, "{"+name+"}:value", "{"+name+"}:permits")
	})
}

// TestRateWaits: a run over the rate waits for the window, by the server's clock.
func TestRateWaits(t *testing.T) {
	tg := testkit.Standalone(t)
	rdb := tg.Redis(t)
	name := "rate-cli-wait"
	for range 2 {
		if p := tool(t, tg.Addrs[0], "rate", "--rate", "1/300ms", "--keep-alive", "1m", name, "--", "true"); p.run() != 0 {
			t.Fatalf("%v", p)
		}
	}
	zs, err := rdb.Do(context.Background(), rdb.B().Zrange().Key("{"+name+"}:permits").Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		t.Fatal(err)
	}
	if len(zs) == 0 || len(zs) > 2 {
		t.Fatalf("grants %v", zs)
	}
	if ttl := testkit.DoString(t, rdb, "PTTL", name); ttl == "-1" {
		t.Errorf("--keep-alive set no expiry")
	}
	// The first grant left the window when the second was made: only the second is there, or both
	// 300ms apart at least.
	if len(zs) == 2 && zs[1].Score-zs[0].Score < 300 {
		t.Errorf("grants %v less than 300ms apart", zs)
	}
	testkit.Do(t, rdb, "DEL", name, "{"+name+"}:value", "{"+name+"}:permits")
}

func TestRateUsage(t *testing.T) {
	for _, args := range [][]string{
		{"rate", "x", "--", "true"},
		{"rate", "--rate", "10", "x", "--", "true"},
		{"rate", "--rate", "0/s", "x", "--", "true"},
		{"rate", "--rate", "5/0.5ms", "x", "--", "true"},
		{"rate", "--rate", "5/s", "x"},
		{"rate", "--rate", "5/s", "--", "true"},
		{"rate", "--rate", "5/s", "--keep-alive", "100ms", "x", "--", "true"},
	} {
		if p := tool(t, "127.0.0.1:1", args...); p.run() != exitUsage {
			t.Errorf("%v", p)
		}
	}
	if p := tool(t, "", "rate", "--help"); p.run() != 0 || !strings.Contains(p.stdout.String(), "N/INTERVAL") {
		t.Errorf("%v", p)
	}
}
