// Package lazyre defers compiling regular expressions to their first use,
// so that a short-lived process (a Slurm hook) pays only for the patterns
// it actually runs.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles pattern on its first call and
// returns the same *regexp.Regexp on every call. Like regexp.MustCompile,
// it panics if the pattern does not compile; the tests of each caller
// compile every pattern they declare.
func New(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
