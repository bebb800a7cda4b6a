//go:build !linux

package main

import (
	"errors"
	"time"
)

// The delay proxy needs Linux's timerfd (see delay_linux.go).
type proxyProcess struct{}

func startDelayProxy(string, time.Duration) (*proxyProcess, error) {
	return nil, errors.New("the delay proxy needs Linux")
}

func (p *proxyProcess) Addr() string { return "" }
func (p *proxyProcess) Close()       {}

func proxyMain(string, string) int { return 2 }
