package main

import (
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Inspecting a lock that a Java service holds: Redisson's layout, a hash of owner -> hold count.
func Example_inspect() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	m.HSet("orders", "6f1d3c9e-1f7a-4a38-9d1c-0c6b2f1f8e21:57", "2")
	m.SetTTL("orders", 30*time.Second)

	run([]string{"inspect", "--addr", m.Addr(), "orders"}, os.Stdout, os.Stderr)
	// Output:
	// orders: lock, held, expires in 30s
	//   holder 6f1d3c9e-1f7a-4a38-9d1c-0c6b2f1f8e21:57  count 2
}
