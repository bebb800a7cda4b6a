// Package reliability checks redisync's primitives against what must hold when things go wrong:
// histories of acquisitions and releases recorded under contention and checked for linearizability
// (github.com/anishathalye/porcupine), the fault matrix of docs/reliability.md (stalled, blocked,
// killed and failed-over servers, lost notifications, clock jumps, a paused holder), replica
// acknowledgement across a Sentinel failover, the exactly-once matrix (every state-changing call of
// every primitive with its reply or its request lost by a proxy, standalone and on a cluster: see
// exactlyonce_test.go and redistest.Proxy), and a soak run under random server and network faults.
//
// It is a module of its own so that its test-only dependencies (porcupine, toxiproxy) never enter
// the library's go.mod. Run it with: cd reliability && go test -race -count=1 ./...
package reliability
