package redistest

import "syscall"

// procAttr puts each server in its own process group, so that a Ctrl-C sent
// to the terminal's group reaches the test binary alone (which then stops its
// servers in order), and makes the kernel SIGKILL the server if the test
// binary dies without cleaning up.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
