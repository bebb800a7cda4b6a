package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
		if p := tool(t, addrs, "rate", "--rate", "2/h", "-n", "-E", "0", name, "--", "sh", "-c", "echo ran"); p.run() != 0 || p.stdout.Len() != 0 || p.stderr.Len() != 0 {
			t.Fatalf("-E 0 over the rate: %v", p)
		}
		// Another --rate than the limiter's is no change: the tool says so.
		if p := tool(t, addrs, "rate", "--rate", "5/h", "-n", "-E", "0", name, "--", "true"); p.run() != 0 ||
			!strings.Contains(p.stderr.String(), "has a rate of 2 per 1h0m0s, not the 5/1h0m0s of --rate") {
			t.Fatalf("another --rate: %v", p)
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

// TestRateUpdate: --update changes the rate in place, keeping the grants in the window (the permits
// left are the new rate minus them), the limiter's type and keep-alive unless --keep-alive is given;
// a NAME without a rate exits 1 and stays unset, a NAME of another kind exits 65, unchanged.
func TestRateUpdate(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, tg *testkit.Target) {
		addrs := strings.Join(tg.Addrs, ",")
		rdb := tg.Redis(t)
		name := "rate-cli-update-" + tg.Name
		keys := []string{name, "{" + name + "}:value", "{" + name + "}:permits"}
		for range 3 {
			p := tool(t, addrs, "rate", "--rate", "10/h", "--keep-alive", "2h", name, "--", "true")
			require.Zero(t, p.run(), "%v", p)
		}
		p := tool(t, addrs, "rate", "--update", "--rate", "20/h", name)
		require.Zero(t, p.run(), "%v", p)
		require.Equal(t, name+": 20 per 1h0m0s (overall), 17 permits left\n", p.stdout.String())
		st, _ := inspectJSON(t, tg, name)
		rs := st.RateLimiter
		require.NotNil(t, rs)
		require.NotNil(t, rs.Available)
		require.Equal(t, rateState{Type: "overall", Rate: 20, IntervalMs: time.Hour.Milliseconds(), KeepAliveMs: 2 * time.Hour.Milliseconds(),
			Available: rs.Available, Grants: 3}, *rs)
		require.EqualValues(t, 17, *rs.Available)

		// Flags after NAME; a rate below the grants leaves no permit.
		p = tool(t, addrs, "rate", "--update", name, "--rate", "2/h", "--keep-alive", "3h")
		require.Zero(t, p.run(), "%v", p)
		require.Equal(t, name+": 2 per 1h0m0s (overall), 0 permits left\n", p.stdout.String())
		require.Equal(t, "10800000", testkit.DoString(t, rdb, "HGET", name, "keepAliveTime"))
		for _, key := range keys {
			ms, err := strconv.ParseInt(testkit.DoString(t, rdb, "PTTL", key), 10, 64)
			require.NoError(t, err)
			require.True(t, ms > (3*time.Hour-time.Minute).Milliseconds(), "PTTL %s = %d, want the new keep-alive", key, ms)
		}
		p = tool(t, addrs, "rate", "--rate", "2/h", "-n", name, "--", "sh", "-c", "echo ran")
		require.Equal(t, exitNotAcquired, p.run(), "%v", p)
		require.Empty(t, p.stdout.String())
		testkit.Do(t, rdb, append([]string{"DEL"}, keys...)...)

		p = tool(t, addrs, "rate", "--update", "--rate", "5/s", name)
		require.Equal(t, exitFailure, p.run(), "%v", p)
		require.Contains(t, p.stderr.String(), "has no rate")
		require.Equal(t, "0", testkit.DoString(t, rdb, "EXISTS", keys[0], keys[1], keys[2]))

		testkit.Do(t, rdb, "SET", name, "app")
		p = tool(t, addrs, "rate", "--update", "--rate", "5/s", name)
		require.Equal(t, exitDataErr, p.run(), "%v", p)
		require.Equal(t, "app", testkit.DoString(t, rdb, "GET", name))
		testkit.Do(t, rdb, "DEL", name)
	})
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
		{"rate", "--update", "x"},
		{"rate", "--update", "--rate", "5/s"},
		{"rate", "--update", "--rate", "5/s", "x", "y"},
		{"rate", "--update", "--rate", "5/s", "x", "--", "true"},
		{"rate", "--update", "--rate", "5/s", "x", "true"},
		{"rate", "--update", "--rate", "5/s", "-n", "x"},
		{"rate", "--update", "--rate", "5/s", "-w", "3", "x"},
		{"rate", "--update", "--rate", "5/s", "-E", "0", "x"},
		{"rate", "--update", "--rate", "5/s", "--keep-alive", "100ms", "x"},
		{"rate", "--update", "--rate", "5/s", "x", "--bogus"},
	} {
		if p := tool(t, "127.0.0.1:1", args...); p.run() != exitUsage {
			t.Errorf("%v", p)
		}
	}
	if p := tool(t, "", "rate", "--help"); p.run() != 0 || !strings.Contains(p.stdout.String(), "N/INTERVAL") {
		t.Errorf("%v", p)
	}
}
