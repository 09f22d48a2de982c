package nccltest

import (
	"context"
	"fmt"
)

// TestFunc tests a node set and returns the verdict; Tester.Test fits it
// through a closure.
type TestFunc func(ctx context.Context, nodes []string) Verdict

// Trial is one test made during a bisection.
type Trial struct {
	// Round is the 1-based bisection round.
	Round int `json:"round"`
	// Nodes is the set tested.
	Nodes []string `json:"nodes"`
	// Verdict is its outcome.
	Verdict Verdict `json:"verdict"`
}

// Bisection is the outcome of Bisect.
type Bisection struct {
	// Bad lists nodes proven faulty: they fail when tested alone or with
	// known-good partners.
	Bad []string `json:"bad"`
	// Suspects lists nodes that could not be cleared or convicted, for
	// example when both halves pass apart but fail together.
	Suspects []string `json:"suspects,omitempty"`
	// Good lists nodes seen in passing sets.
	Good []string `json:"good,omitempty"`
	// Systemic is set when more than MaxBadFraction of the nodes fail: the
	// fault is the launch, the software or the fabric, not the nodes.
	Systemic bool `json:"systemic"`
	// CheckErrors lists the trials whose check itself broke.
	CheckErrors []Trial `json:"check_errors,omitempty"`
	// Rounds is the number of rounds made (tests in a round use disjoint
	// node sets and could run at once).
	Rounds int `json:"rounds"`
	// Trials lists every test in order.
	Trials []Trial `json:"trials"`
	// Note explains an inconclusive result.
	Note string `json:"note,omitempty"`
}

// MaxBadFraction is the share of nodes above which failures are treated as
// systemic rather than as that many broken nodes.
const MaxBadFraction = 0.5

// Bisect finds the faulty nodes of a set whose test failed. It splits the
// set in halves and tests both, recursing into failing halves, so one bad
// node among 8 is found in 3 rounds. A single node is tested together with a
// known-good node when one is known, so that the test still crosses the
// network. When both halves pass, the whole set is tested again once: a
// pass means a transient fault (nothing is convicted), a fail means the
// fault only shows across the halves, and every node is a suspect. When both
// halves fail, both are searched. A check error (hang, crash, misconfigured
// launch) convicts no one, and a half Slurm cannot give at once (nodes busy)
// is left out, neither cleared nor suspected. If more than MaxBadFraction of the nodes end up
// bad, the result is marked Systemic and Bad is moved to Suspects.
func Bisect(ctx context.Context, nodes []string, test TestFunc) Bisection {
	b := &bisector{test: test, good: map[string]bool{}, bad: map[string]bool{}, suspect: map[string]bool{}}
	level := [][]string{nodes}
	for round := 1; len(level) > 0 && ctx.Err() == nil; round++ {
		var next [][]string
		for _, set := range level {
			next = append(next, b.split(ctx, round, set)...)
		}
		if len(b.out.Trials) > 0 && b.out.Trials[len(b.out.Trials)-1].Round == round {
			b.out.Rounds = round
		}
		level = next
	}
	for _, n := range nodes {
		switch {
		case b.bad[n]:
			b.out.Bad = append(b.out.Bad, n)
		case b.suspect[n]:
			b.out.Suspects = append(b.out.Suspects, n)
		case b.good[n]:
			b.out.Good = append(b.out.Good, n)
		}
	}
	if len(nodes) > 1 && float64(len(b.out.Bad)) > MaxBadFraction*float64(len(nodes)) {
		b.out.Systemic = true
		b.out.Suspects = append(b.out.Suspects, b.out.Bad...)
		b.out.Bad = nil
		b.out.Note = fmt.Sprintf("most nodes fail (%d of %d): the fault is the launch, software or fabric, not the nodes", len(b.out.Suspects), len(nodes))
	}
	return b.out
}

type bisector struct {
	test    TestFunc
	good    map[string]bool
	bad     map[string]bool
	suspect map[string]bool
	out     Bisection
}

// split tests both halves of a failing set and returns the sets to search
// in the next round.
func (b *bisector) split(ctx context.Context, round int, set []string) [][]string {
	if len(set) == 1 {
		b.bad[set[0]] = true
		return nil
	}
	mid := len(set) / 2
	halves := [][]string{set[:mid], set[mid:]}
	var failing [][]string
	passed := 0
	for _, h := range halves {
		v := b.run(ctx, round, b.withPartner(h))
		switch v.Status {
		case StatusPass:
			passed++
			for _, n := range h {
				b.good[n] = true
			}
		case StatusFail:
			failing = append(failing, h)
		case StatusNotTested:
			// Other jobs hold the half: it stays unjudged.
		default:
			for _, n := range h {
				b.suspect[n] = true
			}
		}
	}
	if passed == 2 {
		v := b.run(ctx, round, set)
		if v.Status == StatusFail {
			for _, n := range set {
				b.suspect[n] = true
				delete(b.good, n)
			}
			b.out.Note = "halves pass apart but fail together: suspect the fabric path between them"
		} else {
			b.out.Note = "the failure did not repeat: transient"
		}
	}
	return failing
}

// withPartner adds a known-good node to a single-node set so the test still
// crosses the network; a lone node is tested alone otherwise.
func (b *bisector) withPartner(set []string) []string {
	if len(set) != 1 {
		return set
	}
	for _, t := range b.out.Trials {
		if t.Verdict.Status != StatusPass {
			continue
		}
		for _, n := range t.Nodes {
			if b.good[n] && n != set[0] {
				return []string{set[0], n}
			}
		}
	}
	return set
}

func (b *bisector) run(ctx context.Context, round int, set []string) Verdict {
	v := b.test(ctx, set)
	t := Trial{Round: round, Nodes: append([]string(nil), set...), Verdict: v}
	b.out.Trials = append(b.out.Trials, t)
	if v.Status == StatusCheckError {
		b.out.CheckErrors = append(b.out.CheckErrors, t)
	}
	return v
}
