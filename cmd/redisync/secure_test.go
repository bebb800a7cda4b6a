package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

// readmeACL is docs/cli.md's minimal ACL for names that start with "app:" (keep the two equal).
const readmeACL = `on >PASSWORD resetkeys resetchannels ~app:* ~{app:* ~redisson_*app:* ~redisync_*app:* &redisson_*app:* &redisync_*app:* -@all +hello +auth +ping +select +cluster|slots +cluster|shards +info +wait +evalsha +eval +script|load +publish +spublish +subscribe +ssubscribe +unsubscribe +sunsubscribe +pubsub|numsub +pubsub|shardnumsub +time +type +get +exists +pttl +hgetall +lrange +zrange +strlen +hlen +llen +scard +zcard +xlen +hset +hdel +pexpire +decr +decrby +del +hexists +hget +hincrby +incr +incrby +lindex +lpop +lpos +lrem +rpush +set +zadd +zincrby +zrem +zremrangebyscore +zscore +persist +hmget +hsetnx +zrangebyscore +scan +hscan +getrange +zcount +pubsub|channels +pubsub|shardchannels`

// secureServer is a redis-server with TLS and an ACL user, as production runs it.
type secureServer struct {
	*redistest.Server
	tlsAddr         string
	ca, cert, key   string // PEM files
	user, password  string
	passFile, notCA string
}

// startSecure starts a server whose TLS port requires client certificates from the test's own CA
// and knows the user "app" with docs/cli.md's ACL. The plain port stays open to the test only (the
// default user), to check what the tool did.
func startSecure(t *testing.T) *secureServer {
	t.Helper()
	dir := t.TempDir()
	s := &secureServer{user: "app", password: "s3cret-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	caKey, caCert := newCert(t, dir, "ca", nil, nil)
	newCert(t, dir, "server", caKey, caCert)
	newCert(t, dir, "client", caKey, caCert)
	newCert(t, dir, "other-ca", nil, nil)
	s.ca, s.notCA = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "other-ca.pem")
	s.cert, s.key = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	s.passFile = filepath.Join(dir, "password")
	os.WriteFile(s.passFile, []byte(s.password+"\n"), 0o600)

	port := freeTCPPort(t)
	args := []string{
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(dir, "server.pem"),
		"--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", s.ca,
		"--tls-auth-clients", "yes",
		"--user", s.user,
	}
	args = append(args, strings.Fields(strings.Replace(readmeACL, "PASSWORD", s.password, 1))...)
	s.Server = redistest.Start(t, args...)
	s.tlsAddr = "127.0.0.1:" + strconv.Itoa(port)
	return s
}

func freeTCPPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// newCert writes name.pem and name.key: a CA when parent is nil, else a certificate it signs for
// 127.0.0.1. Keys live in the test's temporary directory only.
func newCert(t *testing.T, dir, name string, parentKey *ecdsa.PrivateKey, parent *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	} else {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kb, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return key, cert
}

// run runs the tool on the secure server's TLS port as the ACL user, with extra environment.
func (s *secureServer) tool(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := tool(t, "", args...)
	p.cmd.Env = append(p.cmd.Env, env...)
	return p
}

func (s *secureServer) tlsFlags() []string {
	return []string{"--addr", s.tlsAddr, "--tls", "--cacert", s.ca, "--cert", s.cert, "--key", s.key, "--user", s.user}
}

// TestSecureServer: every subcommand on a TLS server as an ACL user with docs/cli.md's minimal ACL,
// the password from the environment or a file or the URL's, never in any message.
func TestSecureServer(t *testing.T) {
	t.Parallel()
	s := startSecure(t)
	pw := []string{passwordEnv + "=" + s.password}
	tlsFlags := s.tlsFlags()
	marker := filepath.Join(t.TempDir(), "ran")
	for _, args := range [][]string{
		append(append([]string{"lock"}, tlsFlags...), "app:job", "--", "touch", marker),
		append(append([]string{"lock", "--fair"}, tlsFlags...), "app:fair", "--", "true"),
		append(append([]string{"lock", "--write"}, tlsFlags...), "app:rw", "--", "true"),
		append(append([]string{"lock", "--fencing"}, tlsFlags...), "app:fenced", "--", "true"),
		append(append([]string{"semaphore", "--permits", "2"}, tlsFlags...), "app:sem", "--", "true"),
		append(append([]string{"semaphore", "--update", "--add-permits", "1"}, tlsFlags...), "app:sem"),
		append(append([]string{"unlock", "--force"}, tlsFlags...), "app:job"),
		append(append([]string{"latch"}, tlsFlags...), "app:latch", "set", "1"),
		append(append([]string{"latch"}, tlsFlags...), "app:latch", "countdown"),
		append(append([]string{"latch", "--wait", "5s"}, tlsFlags...), "app:latch", "await"),
		append(append([]string{"rate", "--rate", "5/s"}, tlsFlags...), "app:rate", "--", "true"),
		append(append([]string{"rate", "--update", "--rate", "10/s"}, tlsFlags...), "app:rate"),
		append(append([]string{"inspect"}, tlsFlags...), "app:job"),
		append(append([]string{"inspect"}, tlsFlags...), "app:rate"),
		append(append([]string{"inspect"}, tlsFlags...), "app:fair"),
		append(append([]string{"inspect"}, tlsFlags...), "app:sem"),
		append(append([]string{"list"}, tlsFlags...), "app:*"),
		append([]string{"list", "--json"}, tlsFlags...),
	} {
		p := s.tool(t, pw, args...)
		if code := p.run(); code != 0 {
			t.Errorf("%v", p)
		}
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("COMMAND did not run")
	}
	// A held lock broken by an operator: the forced release's script too runs as this user.
	holder := s.tool(t, pw, append(append([]string{"lock", "--watchdog", "3s"}, tlsFlags...), "app:held", "--", "sleep", "60")...).start()
	waitFor(t, 20*time.Second, "the lock held", func() bool { out, _ := s.Do("EXISTS", "app:held"); return strings.TrimSpace(out) == "1" })
	if p := s.tool(t, pw, append(append([]string{"unlock", "--force", "--yes"}, tlsFlags...), "app:held")...); p.run() != 0 ||
		!strings.Contains(p.stdout.String(), "app:held: was held by") {
		t.Errorf("%v", p)
	}
	if code := holder.wait(30 * time.Second); code != exitLost {
		t.Errorf("the holder of a broken lock: %v", holder)
	}
	// The password from a file, the user and TLS from a URL in the environment.
	p := s.tool(t, []string{urlEnv + "=rediss://" + s.user + "@" + s.tlsAddr + "/0"},
		"lock", "--cacert", s.ca, "--cert", s.cert, "--key", s.key, "--password-file", s.passFile, "app:url", "--", "true")
	if code := p.run(); code != 0 {
		t.Errorf("%v", p)
	}
	// The URL's own password, on the command line (where it is visible, but works).
	p = s.tool(t, nil, "lock", "--url", "rediss://"+s.user+":"+s.password+"@"+s.tlsAddr, "--cacert", s.ca, "--cert", s.cert, "--key", s.key, "app:url", "--", "true")
	if code := p.run(); code != 0 {
		t.Errorf("%v", p)
	}
	// Nothing was denied: the ACL is enough (rueidis ignores some refusals, the tool its holder entries').
	if out, _ := s.Do("ACL", "LOG"); strings.TrimSpace(out) != "" {
		t.Errorf("the ACL denied: %s", out)
	}
	// Nothing of the tool stays behind in Redis.
	if out, _ := s.Do("KEYS", "*redisync_holder*"); strings.TrimSpace(out) != "" {
		t.Errorf("holder entries left: %q", out)
	}
}

// TestSecureServerErrors: wrong passwords, missing permissions, a TLS port without --tls, a wrong CA:
// each with its status, a message that says what is wrong, and never the password.
func TestSecureServerErrors(t *testing.T) {
	t.Parallel()
	s := startSecure(t)
	pw := []string{passwordEnv + "=" + s.password}
	tlsFlags := s.tlsFlags()
	for _, tc := range []struct {
		env  []string
		args []string
		code int
		msg  string
	}{
		{[]string{passwordEnv + "=wrong-" + s.password}, append(append([]string{"lock"}, tlsFlags...), "app:x", "--", "true"), exitNoPerm, "authentication failed"},
		{pw, append(append([]string{"lock"}, tlsFlags...), "elsewhere", "--", "true"), exitNoPerm, "NOPERM"},
		{pw, append(append([]string{"inspect"}, tlsFlags...), "elsewhere"), exitNoPerm, "NOPERM"},
		{pw, []string{"lock", "--addr", s.tlsAddr, "--user", s.user, "app:x", "--", "true"}, exitUnavailable, "TLS port without --tls"},
		{pw, []string{"lock", "--addr", s.tlsAddr, "--tls", "--cacert", s.notCA, "--cert", s.cert, "--key", s.key, "app:x", "--", "true"}, exitUnavailable, "certificate"},
		{pw, []string{"lock", "--addr", "redis://" + s.user + ":" + s.password + "@" + s.tlsAddr, "app:x", "--", "true"}, exitUsage, "--url"},
		{nil, []string{"lock", "--url", "rediss://" + s.user + ":" + s.password + "@" + s.tlsAddr + "/x", "app:x", "--", "true"}, exitUsage, "database"},
		{nil, []string{"lock", "--url", "redis://" + s.user + ":" + s.password + "@[" + s.tlsAddr, "app:x", "--", "true"}, exitUsage, "bad URL"},
	} {
		p := s.tool(t, tc.env, tc.args...)
		code := p.run()
		out := p.stdout.String() + p.stderr.String()
		if code != tc.code || !strings.Contains(out, tc.msg) {
			t.Errorf("want %d with %q\n%v", tc.code, tc.msg, p)
		}
		if strings.Contains(out, s.password) {
			t.Errorf("the password is in a message: %s", out)
		}
	}
}

// TestSentinelAuth: Sentinel whose sentinels and master both require a user and password.
func TestSentinelAuth(t *testing.T) {
	t.Parallel()
	st := redistest.StartSentinel(t, "--user", "app", "on", ">master-pw", "~*", "&*", "+@all")
	if _, err := st.Sentinel.Do("ACL", "SETUSER", "sent", "on", ">sentinel-pw", "+@all"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spw := filepath.Join(dir, "spw")
	os.WriteFile(spw, []byte("sentinel-pw\n"), 0o600)
	marker := filepath.Join(dir, "ran")
	p := tool(t, "", "lock", "--sentinel", st.MasterName, "--addr", st.Sentinel.Addr, "--sentinel-user", "sent",
		"--sentinel-password-file", spw, "--user", "app", "sentinel-auth", "--", "touch", marker)
	p.cmd.Env = append(p.cmd.Env, passwordEnv+"=master-pw")
	if code := p.run(); code != 0 {
		t.Fatalf("%v", p)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("COMMAND did not run")
	}
	// A wrong sentinel password is refused.
	os.WriteFile(spw, []byte("wrong\n"), 0o600)
	p = tool(t, "", "lock", "--sentinel", st.MasterName, "--addr", st.Sentinel.Addr, "--sentinel-user", "sent",
		"--sentinel-password-file", spw, "--user", "app", "sentinel-auth", "--", "true")
	p.cmd.Env = append(p.cmd.Env, passwordEnv+"=master-pw")
	if code := p.run(); code == 0 || strings.Contains(p.stderr.String(), "master-pw") {
		t.Errorf("%v", p)
	}
}

// TestNotRedis: an address that is not a Redis server, or lacks its port, gets a message that says so.
func TestNotRedis(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
			c.Close()
		}
	}()
	p := tool(t, l.Addr().String(), "lock", "x", "--", "true")
	if code := p.run(); code != exitUnavailable || !strings.Contains(p.stderr.String(), "not a Redis server") {
		t.Errorf("%v", p)
	}
	// A bare host gets Redis's port: 127.0.0.1 means 127.0.0.1:6379.
	p = tool(t, "", "lock", "--addr", "127.0.0.1", "--wait", "0", "x", "--", "true")
	p.run()
	if !strings.Contains(p.stderr.String(), "127.0.0.1:6379") && p.code != 0 {
		t.Errorf("%v", p)
	}
	p = tool(t, "", "lock", "--addr", "127.0.0.1:http", "x", "--", "true")
	if code := p.run(); code != exitUsage || !strings.Contains(p.stderr.String(), "port") {
		t.Errorf("%v", p)
	}
}
