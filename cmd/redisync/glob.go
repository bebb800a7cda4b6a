package main

import "strings"

// globMatch reports whether s matches the glob pattern as Redis's SCAN MATCH and KEYS read it: *
// (any run), ? (one byte), [abc], [^abc], [a-z], and \ quoting the next byte. list matches the
// objects' names with it, which it derives from side keys and channels that SCAN MATCH cannot test.
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			s = s[1:]
			pattern = pattern[1:]
		case '[':
			if s == "" {
				return false
			}
			rest, ok := matchClass(pattern[1:], s[0])
			if !ok {
				return false
			}
			pattern, s = rest, s[1:]
		default:
			if pattern[0] == '\\' && len(pattern) > 1 {
				pattern = pattern[1:]
			}
			if s == "" || s[0] != pattern[0] {
				return false
			}
			pattern, s = pattern[1:], s[1:]
		}
	}
	return s == ""
}

// matchClass matches c against the class that p starts (after its '['), and returns what follows
// the class. An unclosed class runs to the end of the pattern, as in Redis.
func matchClass(p string, c byte) (rest string, ok bool) {
	not := strings.HasPrefix(p, "^")
	if not {
		p = p[1:]
	}
	match := false
	for len(p) > 0 && p[0] != ']' {
		switch {
		case p[0] == '\\' && len(p) > 1:
			match = match || p[1] == c
			p = p[2:]
		case len(p) > 2 && p[1] == '-':
			lo, hi := p[0], p[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (lo <= c && c <= hi)
			p = p[3:]
		default:
			match = match || p[0] == c
			p = p[1:]
		}
	}
	if len(p) > 0 {
		p = p[1:] // the ']'
	}
	return p, match != not
}
