package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

// TestSecretsStayOut: COMMAND's environment has no password of the tool's, and Redis has no
// argument of COMMAND's unless --record-command asks for them: whoever reads Redis reads the holder
// records.
func TestSecretsStayOut(t *testing.T) {
	t.Parallel()
	const password = "pw-of-the-tool-7d1"
	s := redistest.Start(t, "--user", "tool", "on", ">"+password, "~*", "&*", "+@all")
	dir := t.TempDir()
	for _, record := range []bool{false, true} {
		envFile, started, release := filepath.Join(dir, "env"), filepath.Join(dir, "started"), filepath.Join(dir, "release")
		os.Remove(started)
		os.Remove(release)
		args := []string{"lock", "--user", "tool"}
		if record {
			args = append(args, "--record-command")
		}
		args = append(args, "secrets", "--", "sh", "-c", `env > "$0"; touch "$1"; while [ ! -e "$2" ]; do sleep 0.02; done`,
			envFile, started, release, "--api-token=sk_live_123")
		p := tool(t, s.Addr, args...)
		p.cmd.Env = append(p.cmd.Env, passwordEnv+"="+password, sentinelPasswordEnv+"=sentinel-"+password,
			urlEnv+"=redis://tool:"+password+"@"+s.Addr+"/0")
		p.start()
		waitFor(t, 20*time.Second, "COMMAND runs", func() bool { _, err := os.Stat(started); return err == nil })
		holders, err := s.Do("HGETALL", "redisync_holder:{secrets}")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(holders, `"program":"sh"`) || !strings.Contains(holders, `"pid":`) {
			t.Errorf("holder record %q: want the program's name and pid", holders)
		}
		if got := strings.Contains(holders, "sk_live_123"); got != record {
			t.Errorf("--record-command %v: the holder record %q has COMMAND's arguments: %v", record, holders, got)
		}
		os.WriteFile(release, nil, 0o644)
		if code := p.wait(20 * time.Second); code != 0 {
			t.Fatalf("%v", p)
		}
		env := mustRead(t, envFile)
		if strings.Contains(env, password) || strings.Contains(env, passwordEnv+"=") || strings.Contains(env, sentinelPasswordEnv+"=") {
			t.Errorf("COMMAND's environment has a password:\n%s", env)
		}
		if !strings.Contains(env, urlEnv+"=redis://tool@"+s.Addr+"/0") {
			t.Errorf("COMMAND's environment lacks the URL without its password:\n%s", env)
		}
	}
}

// TestWrongOneLetterPassword: a password's letters elsewhere in a message stay: masking is of the
// credential where it stands.
func TestWrongOneLetterPassword(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, "--user", "tool", "on", ">right", "~*", "&*", "+@all")
	p := tool(t, s.Addr, "lock", "--user", "tool", "x", "--", "true")
	p.cmd.Env = append(p.cmd.Env, passwordEnv+"=e")
	if code := p.run(); code != exitNoPerm || !strings.Contains(p.stderr.String(), "redisync lock: cannot connect") {
		t.Errorf("want 77 with an intact message\n%v", p)
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		known     []string
		msg, want string
	}{
		{[]string{"e"}, "redisync lock: cannot connect to 127.0.0.1:1: connection refused", ""},
		{[]string{"e"}, "bad URL redis://app:e@host:6379/0", "bad URL redis://app:********@host:6379/0"},
		{nil, "rediss://app:unknown-one@host", "rediss://app:********@host"},
		{nil, "redis://app@host:6379 and redis://host:6379/2", ""},
		{[]string{"s3cret"}, "ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'app' 's3cret' ",
			"ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'app' '********' "},
		{[]string{"s3cret"}, "unknown command `HELLO`, with args beginning with: `3`, `AUTH`, `s3cret`,",
			"unknown command `HELLO`, with args beginning with: `3`, `AUTH`, `********`,"},
		{[]string{"s3cret"}, "sent AUTH app s3cret", "sent AUTH app ********"},
		{[]string{"s3cret"}, "s3cretive words and xs3cret stay", ""},
	} {
		want := tc.want
		if want == "" {
			want = tc.msg
		}
		if got := redact(tc.msg, tc.known); got != want {
			t.Errorf("redact(%q, %q) = %q, want %q", tc.msg, tc.known, got, want)
		}
	}
}

func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"HOME=/root", passwordEnv + "=x", sentinelPasswordEnv + "=y", addrEnv + "=h:1",
		urlEnv + "=rediss://u:pw@h:1/2"})
	want := []string{"HOME=/root", addrEnv + "=h:1", urlEnv + "=rediss://u@h:1/2"}
	if !slices.Equal(got, want) {
		t.Errorf("childEnv = %q, want %q", got, want)
	}
	if got := childEnv([]string{urlEnv + "=redis://u:p@[bad"}); len(got) != 0 {
		t.Errorf("an unreadable URL with a password kept: %q", got)
	}
}
