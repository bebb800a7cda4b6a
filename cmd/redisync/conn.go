package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
)

const (
	addrEnv     = "REDISYNC_ADDR"
	defaultAddr = "127.0.0.1:6379"
)

// connFlags are the connection flags every subcommand takes.
type connFlags struct {
	addr     string
	sentinel string
}

func (c *connFlags) register(fs *flag.FlagSet) {
	c.registerWith(fs, "(default $"+addrEnv+", else "+defaultAddr+")")
}

func (c *connFlags) registerWith(fs *flag.FlagSet, note string) {
	fs.StringVar(&c.addr, "addr", "", "Redis `host:port`; several, comma-separated, for a cluster, or the sentinels' with --sentinel\n"+note)
	fs.StringVar(&c.sentinel, "sentinel", "", "connect through Sentinel to the master named `MASTER`; --addr lists the sentinels")
}

// explicit reports whether an address was given on the command line.
func (c *connFlags) explicit() bool { return c.addr != "" || c.sentinel != "" }

// option returns the rueidis options the flags describe.
func (c *connFlags) option() (rueidis.ClientOption, error) {
	addr := c.addr
	if addr == "" {
		addr = os.Getenv(addrEnv)
	}
	if addr == "" {
		addr = defaultAddr
	}
	var addrs []string
	for _, a := range strings.Split(addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return rueidis.ClientOption{}, errors.New("no address in --addr")
	}
	// The tool never uses client-side caching, and managed servers may lack CLIENT TRACKING.
	opt := rueidis.ClientOption{InitAddress: addrs, DisableCache: true}
	if c.sentinel != "" {
		opt.Sentinel = rueidis.SentinelOption{MasterSet: c.sentinel}
	}
	return opt, nil
}

// connect returns a Client on the flags' server, or the exit status and a message on stderr.
func (c *connFlags) connect(cmd *command, opts ...redisync.Option) (*redisync.Client, int) {
	opt, err := c.option()
	if err != nil {
		return nil, cmd.usageError("%v", err)
	}
	client, err := redisync.New(opt, opts...)
	if err != nil {
		fmt.Fprintf(cmd.stderr, "redisync %s: cannot connect to %s: %v\n", cmd.name, describe(opt), err)
		return nil, exitUnavailable
	}
	return client, -1
}

func describe(opt rueidis.ClientOption) string {
	s := strings.Join(opt.InitAddress, ",")
	if opt.Sentinel.MasterSet != "" {
		s = fmt.Sprintf("master %q through sentinels %s", opt.Sentinel.MasterSet, s)
	}
	return s
}
