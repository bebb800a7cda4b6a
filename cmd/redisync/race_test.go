//go:build race

package main

// raceEnabled: the tool under test is built with the race detector too.
const raceEnabled = true
