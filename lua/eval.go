package lua

import "github.com/redis/rueidis"

// EvalCommand returns the EVAL command that runs s, for callers that must send the script in one
// DoMulti together with other commands on the same connection (a WAIT right after an acquisition).
// EVAL needs no NOSCRIPT fallback: the server caches the script as EVALSHA would have found it.
func (s *Script) EvalCommand(c rueidis.Client, keys, args []string) rueidis.Completed {
	return c.B().Eval().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}
