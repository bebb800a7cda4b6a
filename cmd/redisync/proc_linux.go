package main

import "syscall"

// deathSignal makes the kernel kill COMMAND when the tool dies (kill -9 included): the lock it held
// is about to expire, and COMMAND must not go on unprotected.
func deathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
