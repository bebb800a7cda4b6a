//go:build unix && !linux

package redistest

import "syscall"

// procAttr puts each server in its own process group, so that a Ctrl-C sent
// to the terminal's group reaches the test binary alone. Outside Linux there
// is no parent-death signal: only Close and tb.Cleanup stop the servers.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
