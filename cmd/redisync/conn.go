package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
)

// Environment variables. Passwords come only from the environment or a file, never from argv, where
// every user of the machine can read them (ps).
const (
	addrEnv             = "REDISYNC_ADDR"
	urlEnv              = "REDISYNC_URL"
	passwordEnv         = "REDISYNC_PASSWORD"
	sentinelPasswordEnv = "REDISYNC_SENTINEL_PASSWORD"
	defaultAddr         = "127.0.0.1:6379"
	defaultPort         = "6379"
)

// connFlags are the connection flags every subcommand takes.
type connFlags struct {
	addr         string
	url          string
	user         string
	passwordFile string
	db           dbFlag
	tls          bool
	cacert       string
	cert         string
	key          string
	sentinel     string
	sentinelUser string
	sentinelPass string // file
	prefix       string
}

func (c *connFlags) register(fs *flag.FlagSet) {
	c.registerWith(fs, "(default $"+addrEnv+", else "+defaultAddr+")")
}

func (c *connFlags) registerWith(fs *flag.FlagSet, note string) {
	fs.StringVar(&c.addr, "addr", "", "Redis `host:port` (port 6379 if left out); several, comma-separated, for a cluster, or the sentinels' with --sentinel\n"+note)
	fs.StringVar(&c.url, "url", "", "redis://[USER[:PASSWORD]@]HOST[:PORT][/DB] or rediss:// (TLS) (default $"+urlEnv+");\n`URL`s with a password are better given in $"+urlEnv+": argv is public")
	fs.StringVar(&c.user, "user", "", "ACL `USER` to authenticate as; the password comes from $"+passwordEnv+" or --password-file")
	fs.StringVar(&c.passwordFile, "password-file", "", "read the password from `FILE` (its first line)")
	fs.Var(&c.db, "db", "select database `N` (standalone and Sentinel)")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS (implied by rediss:// and by --cacert, --cert)")
	fs.StringVar(&c.cacert, "cacert", "", "verify the server with the CA certificates in PEM `FILE` (default: the system's)")
	fs.StringVar(&c.cert, "cert", "", "client certificate PEM `FILE` for TLS client authentication (with --key)")
	fs.StringVar(&c.key, "key", "", "client private key PEM `FILE` (with --cert)")
	fs.StringVar(&c.sentinel, "sentinel", "", "connect through Sentinel to the master named `MASTER`; --addr lists the sentinels")
	fs.StringVar(&c.sentinelUser, "sentinel-user", "", "ACL `USER` for the sentinels; their password comes from $"+sentinelPasswordEnv+" or --sentinel-password-file")
	fs.StringVar(&c.sentinelPass, "sentinel-password-file", "", "read the sentinels' password from `FILE`")
	fs.StringVar(&c.prefix, "prefix", "", "prepend `PREFIX` to every NAME, as a Redisson NameMapper that prepends it does (keys and channels are\nbuilt from PREFIX+NAME): meet Java processes so configured, or keep tenants of one Redis apart")
}

// objectKey returns the key of the object called name: name with the --prefix.
func (c *connFlags) objectKey(name string) string { return c.prefix + name }

// explicit reports whether a server was given on the command line.
func (c *connFlags) explicit() bool { return c.addr != "" || c.url != "" || c.sentinel != "" }

// option returns the rueidis options the flags and the environment describe. Its errors never
// contain a password.
func (c *connFlags) option() (rueidis.ClientOption, error) {
	opt, fromURL, err := c.urlOption()
	if err != nil {
		return opt, err
	}
	if err := c.addresses(&opt, fromURL); err != nil {
		return opt, err
	}
	if err := c.credentials(&opt); err != nil {
		return opt, err
	}
	if c.tls || c.cacert != "" || c.cert != "" || c.key != "" || opt.TLSConfig != nil {
		if opt.TLSConfig, err = c.tlsConfig(opt.TLSConfig, opt.InitAddress); err != nil {
			return opt, err
		}
	}
	return opt, c.sentinelOption(&opt)
}

// urlOption returns the options of --url or $REDISYNC_URL, and whether there was one. The tool never
// uses client-side caching, and managed servers may lack CLIENT TRACKING.
func (c *connFlags) urlOption() (rueidis.ClientOption, bool, error) {
	u := c.url
	if u == "" {
		u = os.Getenv(urlEnv)
	}
	if u == "" {
		return rueidis.ClientOption{DisableCache: true}, false, nil
	}
	opt, err := rueidis.ParseURL(u)
	if err != nil {
		return rueidis.ClientOption{DisableCache: true}, true, fmt.Errorf("bad URL: %v", urlError(err))
	}
	opt.DisableCache = true
	if p, ok := urlPassword(u); ok {
		addSecret(p)
	}
	return opt, true, nil
}

// addresses sets opt's servers from --addr, else $REDISYNC_ADDR or the default when no URL gave them.
func (c *connFlags) addresses(opt *rueidis.ClientOption, fromURL bool) error {
	addr := c.addr
	if addr == "" && !fromURL {
		if addr = os.Getenv(addrEnv); addr == "" {
			addr = defaultAddr
		}
	}
	if addr == "" {
		return nil
	}
	if strings.Contains(addr, "://") || strings.Contains(addr, "@") {
		return errors.New("--addr takes host:port; give a URL with --url or $" + urlEnv)
	}
	opt.InitAddress = nil
	for _, a := range strings.Split(addr, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		a, err := hostPort(a)
		if err != nil {
			return err
		}
		opt.InitAddress = append(opt.InitAddress, a)
	}
	if len(opt.InitAddress) == 0 {
		return errors.New("no address in --addr")
	}
	return nil
}

// credentials sets the user, the password and the database of opt, where given.
func (c *connFlags) credentials(opt *rueidis.ClientOption) error {
	if c.user != "" {
		opt.Username = c.user
	}
	pass, err := secret(passwordEnv, c.passwordFile, "--password-file")
	if err != nil {
		return err
	}
	if pass != "" {
		opt.Password = pass
	}
	if c.db.set {
		opt.SelectDB = c.db.n
	}
	return nil
}

// sentinelOption sets opt to go through the sentinels of --sentinel, with their credentials.
func (c *connFlags) sentinelOption(opt *rueidis.ClientOption) error {
	if c.sentinel == "" {
		if c.sentinelUser != "" || c.sentinelPass != "" {
			return errors.New("--sentinel-user and --sentinel-password-file go with --sentinel")
		}
		return nil
	}
	opt.Sentinel = rueidis.SentinelOption{MasterSet: c.sentinel, Username: c.sentinelUser, TLSConfig: opt.TLSConfig}
	var err error
	opt.Sentinel.Password, err = secret(sentinelPasswordEnv, c.sentinelPass, "--sentinel-password-file")
	return err
}

// dbFlag is --db: a database number, 0 or more.
type dbFlag struct {
	n   int
	set bool
}

func (d *dbFlag) String() string {
	if d == nil || !d.set {
		return ""
	}
	return strconv.Itoa(d.n)
}

func (d *dbFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q: want a database number, 0 or more", s)
	}
	d.n, d.set = n, true
	return nil
}

// hostPort checks a host:port and adds the default port to a bare host.
func hostPort(a string) (string, error) {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		// A bare host ("127.0.0.1", "redis", "::1", "[::1]") gets Redis's port.
		h := strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
		if !validHost(h) || strings.HasPrefix(a, "[") != strings.HasSuffix(a, "]") {
			return "", fmt.Errorf("bad address %q: want host:port", a)
		}
		return net.JoinHostPort(h, defaultPort), nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("bad address %q: the port must be a number from 1 to 65535", a)
	}
	if host == "" {
		host = "127.0.0.1"
	} else if !validHost(host) {
		return "", fmt.Errorf("bad address %q: want host:port", a)
	}
	return net.JoinHostPort(host, port), nil
}

// validHost reports whether h can name a host: an IP address, or a name without the characters
// that no host name has. A colon belongs to IPv6 addresses only (":::" is none).
func validHost(h string) bool {
	if h == "" || strings.ContainsAny(h, "[]/ @") {
		return false
	}
	if strings.Contains(h, ":") {
		return net.ParseIP(h) != nil
	}
	return true
}

// secret reads a password from the environment variable env or from file (flag names the flag).
func secret(env, file, flag string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: %v", flag, err)
		}
		p, _, _ := strings.Cut(string(b), "\n")
		p = strings.TrimSuffix(p, "\r")
		if p == "" {
			return "", fmt.Errorf("%s: %s has no password on its first line", flag, file)
		}
		addSecret(p)
		return p, nil
	}
	p := os.Getenv(env)
	addSecret(p)
	return p, nil
}

func (c *connFlags) tlsConfig(base *tls.Config, addrs []string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if base != nil {
		cfg = base.Clone()
	}
	if cfg.ServerName == "" && len(addrs) > 0 {
		cfg.ServerName, _, _ = net.SplitHostPort(addrs[0])
	}
	if c.cacert != "" {
		pem, err := os.ReadFile(c.cacert)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert: no PEM certificate in %s", c.cacert)
		}
		cfg.RootCAs = pool
	}
	if (c.cert == "") != (c.key == "") {
		return nil, errors.New("--cert and --key go together")
	}
	if c.cert != "" {
		pair, err := tls.LoadX509KeyPair(c.cert, c.key)
		if err != nil {
			return nil, fmt.Errorf("--cert, --key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// urlError drops the URL itself from a parse error: it may hold a password.
func urlError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func urlPassword(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return "", false
	}
	return u.User.Password()
}

// connect returns a Client on the flags' server, or the exit status and a message on stderr. A
// budget > 0 bounds the connection and its handshake (see dial).
func (c *connFlags) connect(cmd *command, budget time.Duration, opts ...redisync.Option) (*redisync.Client, int) {
	opt, err := c.option()
	if err != nil {
		return nil, cmd.usageError("%v", err)
	}
	if c.prefix != "" {
		prefix := c.prefix
		opts = append(opts, redisync.WithNameMapper(func(name string) string { return prefix + name }))
	}
	opts = append(opts, redisync.WithLogger(cmd.logger()))
	client, err := dial(opt, budget, func(opt rueidis.ClientOption) (*redisync.Client, error) { return redisync.New(opt, opts...) },
		func(c *redisync.Client) { c.Close() })
	if err != nil {
		return nil, connectError(cmd, opt, err)
	}
	return client, -1
}

// rawClient returns a rueidis client on the flags' server (for inspect and list, which only read).
func (c *connFlags) rawClient(cmd *command, budget time.Duration) (rueidis.Client, int) {
	opt, err := c.option()
	if err != nil {
		return nil, cmd.usageError("%v", err)
	}
	rdb, err := dial(opt, budget, rueidis.NewClient, rueidis.Client.Close)
	if err != nil {
		return nil, connectError(cmd, opt, err)
	}
	return rdb, -1
}

// errNoAnswer is a connection that budget ran out on.
type errNoAnswer struct{ budget time.Duration }

func (e errNoAnswer) Error() string {
	return fmt.Sprintf("no answer within %v (the wait bound): the server is paused, overloaded or unreachable", e.budget)
}

// dial makes a client with open. rueidis dials and sends its handshake (HELLO, AUTH, SELECT) before
// it returns, waiting for a server that stalls for up to its dial timeout: with budget > 0, that
// timeout is the budget, and dial returns once it has passed whatever open does (a cluster's or
// Sentinel's discovery too); a client made after that is closed.
func dial[T any](opt rueidis.ClientOption, budget time.Duration, open func(rueidis.ClientOption) (T, error), close func(T)) (T, error) {
	if budget <= 0 {
		return open(opt)
	}
	if opt.Dialer.Timeout == 0 || opt.Dialer.Timeout > budget {
		opt.Dialer.Timeout = budget
	}
	type result struct {
		c   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := open(opt)
		done <- result{c, err}
	}()
	t := time.NewTimer(budget + connectOvertime)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil && errors.Is(r.err, context.DeadlineExceeded) {
			r.err = errNoAnswer{budget}
		}
		return r.c, r.err
	case <-t.C:
		go func() {
			if r := <-done; r.err == nil {
				close(r.c)
			}
		}()
		var zero T
		return zero, errNoAnswer{budget}
	}
}

// connectOvertime is how long past its budget dial waits for rueidis to report the timeout itself.
const connectOvertime = 100 * time.Millisecond

// connectError reports a failed connection in words and returns its status.
func connectError(cmd *command, opt rueidis.ClientOption, err error) int {
	fmt.Fprintf(cmd.stderr, "redisync %s: cannot connect to %s: %s\n", cmd.name, describe(opt), explain(err))
	return statusOf(err)
}

func describe(opt rueidis.ClientOption) string {
	s := strings.Join(opt.InitAddress, ",")
	if opt.Sentinel.MasterSet != "" {
		s = fmt.Sprintf("master %q through sentinels %s", opt.Sentinel.MasterSet, s)
	}
	if opt.TLSConfig != nil {
		s += " (TLS)"
	}
	return s
}
