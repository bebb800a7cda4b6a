//go:build linux

package main

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// echoServer answers every byte it reads with the same byte.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// The proxy delivers every byte in order, in both directions, never before the delay each way has
// passed, and Close ends every connection it forwards.
func TestDelayProxy(t *testing.T) {
	const oneWay = 2 * time.Millisecond
	p, err := newDelayProxy(echoServer(t), oneWay)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp4", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Many small writes, back to back: the answer is the same bytes in the same order.
	var sent bytes.Buffer
	for i := range 2000 {
		b := []byte{byte(i), byte(i >> 8), '\n'}
		sent.Write(b)
	}
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, sent.Len())
		_, err := io.ReadFull(c, b)
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	for b := sent.Bytes(); len(b) > 0; b = b[3:] {
		if _, err := c.Write(b[:3]); err != nil {
			t.Fatal(err)
		}
	}
	if b := <-got; !bytes.Equal(b, sent.Bytes()) {
		t.Fatal("the bytes came back changed or out of order")
	}
	// A round trip takes at least the delay both ways.
	for range 5 {
		start := time.Now()
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		if rt := time.Since(start); rt < 2*oneWay {
			t.Fatalf("a round trip took %v through a proxy that holds every byte %v each way", rt, oneWay)
		}
	}
	p.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection is still up after Close")
	}
}

// A server that refuses connections closes the client's through the proxy.
func TestDelayProxyRefused(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := newDelayProxy(addr, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp4", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("read through a proxy to a closed port: %v, want the connection closed", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
