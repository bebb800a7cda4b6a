//go:build unix && !linux

package main

import "syscall"

// deathSignal does nothing where the kernel cannot signal a child when its parent dies.
func deathSignal(*syscall.SysProcAttr) {}
