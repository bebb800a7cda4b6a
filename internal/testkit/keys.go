package testkit

import (
	"slices"
	"strings"
	"testing"
)

// Keys returns the keys on the nodes of tg, sorted, each once (a replica holds its master's).
func (tg *Target) Keys(t testing.TB) []string {
	t.Helper()
	var keys []string
	for _, s := range tg.Servers {
		out, err := s.Do("KEYS", "*")
		if err != nil {
			t.Fatalf("KEYS on %s: %v", s.Addr, err)
		}
		if out != "" {
			keys = append(keys, strings.Split(out, "\n")...)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// NewKeys returns the keys of tg that are not in before (a Keys taken earlier), sorted.
func (tg *Target) NewKeys(t testing.TB, before []string) []string {
	t.Helper()
	var added []string
	for _, k := range tg.Keys(t) {
		if _, found := slices.BinarySearch(before, k); !found {
			added = append(added, k)
		}
	}
	return added
}
