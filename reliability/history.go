package reliability

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Op is what one recorded operation did.
type Op int

// The operations of a history. Lock and Unlock are exclusive (a lock, a fair lock, the write side of
// a read-write lock); RLock and RUnlock the read side; Acquire and Release take and give back N
// permits of a semaphore.
const (
	Lock Op = iota
	Unlock
	RLock
	RUnlock
	Acquire
	Release
)

var opNames = [...]string{"lock", "unlock", "rlock", "runlock", "acquire", "release"}

// String returns the operation's name as histories print it.
func (o Op) String() string { return opNames[o] }

// Input is one operation on one object: its name (histories are checked per name), the owner that
// made it (a number from 1, unique within the history) and, for semaphores, the permit count.
type Input struct {
	Name  string
	Owner int
	Op    Op
	N     int64
}

// Recorder collects a history: for every operation that succeeded, the times of its call and of its
// return on the monotonic clock. An operation that failed changed nothing (that is what every
// primitive promises for a failed acquire or release) and is left out. Safe for concurrent use.
type Recorder struct {
	base time.Time
	mu   sync.Mutex
	ops  []porcupine.Operation
}

// NewRecorder starts an empty history.
func NewRecorder() *Recorder { return &Recorder{base: time.Now()} }

// Do runs fn as the operation in, and records it when fn returns nil. The client id only groups
// operations for porcupine's visualisation.
func (r *Recorder) Do(client int, in Input, fn func() error) error {
	call := time.Since(r.base).Nanoseconds() // time.Since reads the monotonic clock
	err := fn()
	ret := time.Since(r.base).Nanoseconds()
	if err == nil {
		r.mu.Lock()
		r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Return: ret})
		r.mu.Unlock()
	}
	return err
}

// DoEach runs fn as one operation op by client on each of names (a MultiLock over several locks),
// and records it once per name when fn returns nil.
func (r *Recorder) DoEach(client int, names []string, op Op, fn func() error) error {
	call := time.Since(r.base).Nanoseconds()
	err := fn()
	ret := time.Since(r.base).Nanoseconds()
	if err == nil {
		r.mu.Lock()
		for _, name := range names {
			in := Input{Name: name, Owner: client + 1, Op: op}
			r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Return: ret})
		}
		r.mu.Unlock()
	}
	return err
}

// Len returns how many operations were recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Check checks the history against model within timeout: porcupine.Ok when a sequential order of
// the operations exists that respects real time and the model, Illegal when none does, Unknown when
// the timeout passed first.
func (r *Recorder) Check(model porcupine.Model, timeout time.Duration) porcupine.CheckResult {
	r.mu.Lock()
	ops := append([]porcupine.Operation(nil), r.ops...)
	r.mu.Unlock()
	return porcupine.CheckOperationsTimeout(model, ops, timeout)
}

// byName splits a history into one partition per object name: objects are independent, and a small
// partition is checked much faster than the whole history.
func byName(history []porcupine.Operation) [][]porcupine.Operation {
	parts := map[string][]porcupine.Operation{}
	var names []string
	for _, op := range history {
		name := op.Input.(Input).Name
		if _, ok := parts[name]; !ok {
			names = append(names, name)
		}
		parts[name] = append(parts[name], op)
	}
	sort.Strings(names)
	out := make([][]porcupine.Operation, 0, len(names))
	for _, n := range names {
		out = append(out, parts[n])
	}
	return out
}

// MutexModel is an exclusive lock: the state is its holder, 0 when free. Lock needs it free; Unlock
// needs the caller to hold it.
var MutexModel = porcupine.Model{
	Partition: byName,
	Init:      func() any { return 0 },
	Step: func(state, input, _ any) (bool, any) {
		holder, in := state.(int), input.(Input)
		switch in.Op {
		case Lock:
			return holder == 0, in.Owner
		case Unlock:
			return holder == in.Owner, 0
		}
		return false, state
	},
	DescribeOperation: describe,
}

// rwState is a read-write lock's state: its writer (0 when none) and how many read holds it has.
type rwState struct{ writer, readers int }

// RWModel is a read-write lock: a writer excludes everyone, readers exclude only writers.
var RWModel = porcupine.Model{
	Partition: byName,
	Init:      func() any { return rwState{} },
	Step: func(state, input, _ any) (bool, any) {
		s, in := state.(rwState), input.(Input)
		switch in.Op {
		case Lock:
			return s.writer == 0 && s.readers == 0, rwState{writer: in.Owner}
		case Unlock:
			return s.writer == in.Owner, rwState{readers: s.readers}
		case RLock:
			return s.writer == 0, rwState{readers: s.readers + 1}
		case RUnlock:
			return s.readers > 0, rwState{readers: s.readers - 1}
		}
		return false, state
	},
	DescribeOperation: describe,
}

// SemaphoreModel is a semaphore that starts with permits: Acquire(n) needs n available, Release(n)
// gives n back.
func SemaphoreModel(permits int64) porcupine.Model {
	return porcupine.Model{
		Partition: byName,
		Init:      func() any { return permits },
		Step: func(state, input, _ any) (bool, any) {
			avail, in := state.(int64), input.(Input)
			switch in.Op {
			case Acquire:
				return avail >= in.N, avail - in.N
			case Release:
				return avail+in.N <= permits, avail + in.N
			}
			return false, state
		},
		DescribeOperation: describe,
	}
}

func describe(input, _ any) string {
	in := input.(Input)
	if in.N != 0 {
		return fmt.Sprintf("%s %s(%d) by %d", in.Name, in.Op, in.N, in.Owner)
	}
	return fmt.Sprintf("%s %s by %d", in.Name, in.Op, in.Owner)
}
