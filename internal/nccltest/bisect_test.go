package nccltest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// cluster simulates nodes where a set fails when it holds a bad node; with
// netOnly the fault only shows when the test crosses the network.
type cluster struct {
	bad     map[string]bool
	netOnly bool
	pairBad [2]string // fails only when both are in the set
	broken  bool      // every test is a check error
}

func (c cluster) test(_ context.Context, nodes []string) Verdict {
	if c.broken {
		return Verdict{Status: StatusCheckError, Kind: "timeout"}
	}
	in := map[string]bool{}
	for _, n := range nodes {
		in[n] = true
	}
	if c.pairBad[0] != "" && in[c.pairBad[0]] && in[c.pairBad[1]] {
		return Verdict{Status: StatusFail}
	}
	for _, n := range nodes {
		if c.bad[n] && (!c.netOnly || len(nodes) > 1) {
			return Verdict{Status: StatusFail}
		}
	}
	return Verdict{Status: StatusPass}
}

func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%02d", i+1)
	}
	return out
}

func TestBisectOneBadAmongEight(t *testing.T) {
	nodes := nodeNames(8)
	for _, netOnly := range []bool{false, true} {
		for _, bad := range nodes {
			t.Run(fmt.Sprintf("%s/net=%v", bad, netOnly), func(t *testing.T) {
				c := cluster{bad: map[string]bool{bad: true}, netOnly: netOnly}
				got := Bisect(context.Background(), nodes, c.test)
				if !reflect.DeepEqual(got.Bad, []string{bad}) || got.Systemic {
					t.Fatalf("bad = %v (suspects %v, systemic %v), want [%s]", got.Bad, got.Suspects, got.Systemic, bad)
				}
				if got.Rounds > 4 {
					t.Errorf("rounds = %d, want <= 4", got.Rounds)
				}
				if len(got.Trials) > 6 {
					t.Errorf("trials = %d, want <= 6", len(got.Trials))
				}
			})
		}
	}
}

func TestBisectCases(t *testing.T) {
	nodes := nodeNames(8)
	tests := []struct {
		name         string
		c            cluster
		wantBad      []string
		wantSuspects []string
		systemic     bool
		maxRounds    int
	}{
		{name: "two bad in different halves", c: cluster{bad: map[string]bool{"n02": true, "n07": true}}, wantBad: []string{"n02", "n07"}, maxRounds: 3},
		{name: "two bad in one quarter", c: cluster{bad: map[string]bool{"n05": true, "n06": true}}, wantBad: []string{"n05", "n06"}, maxRounds: 3},
		{name: "halves pass apart, fail together", c: cluster{pairBad: [2]string{"n01", "n08"}}, wantSuspects: nodes, maxRounds: 1},
		{name: "every node fails: systemic", c: cluster{bad: map[string]bool{"n01": true, "n02": true, "n03": true, "n04": true, "n05": true, "n06": true, "n07": true, "n08": true}}, wantSuspects: nodes, systemic: true, maxRounds: 3},
		{name: "check broken convicts no one", c: cluster{broken: true}, wantSuspects: nodes, maxRounds: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Bisect(context.Background(), nodes, tt.c.test)
			if !reflect.DeepEqual(got.Bad, tt.wantBad) {
				t.Errorf("bad = %v, want %v", got.Bad, tt.wantBad)
			}
			if !reflect.DeepEqual(got.Suspects, tt.wantSuspects) {
				t.Errorf("suspects = %v, want %v", got.Suspects, tt.wantSuspects)
			}
			if got.Systemic != tt.systemic {
				t.Errorf("systemic = %v, want %v", got.Systemic, tt.systemic)
			}
			if got.Rounds > tt.maxRounds {
				t.Errorf("rounds = %d, want <= %d", got.Rounds, tt.maxRounds)
			}
		})
	}
}

func TestBisectTransientFailure(t *testing.T) {
	nodes := nodeNames(4)
	calls := 0
	got := Bisect(context.Background(), nodes, func(context.Context, []string) Verdict {
		calls++
		return Verdict{Status: StatusPass}
	})
	if len(got.Bad) != 0 || len(got.Suspects) != 0 || calls != 3 {
		t.Fatalf("bad %v suspects %v calls %d; want none, none, 3", got.Bad, got.Suspects, calls)
	}
	if got.Note == "" {
		t.Error("want a note explaining the transient result")
	}
}

// TestBisectBusyHalf leaves a half that Slurm could not give at once out of
// the verdict: neither cleared nor suspected, while the other half is still
// searched.
func TestBisectBusyHalf(t *testing.T) {
	nodes := nodeNames(8)
	busy := map[string]bool{nodes[4]: true}
	c := cluster{bad: map[string]bool{nodes[1]: true}}
	b := Bisect(context.Background(), nodes, func(ctx context.Context, set []string) Verdict {
		for _, n := range set {
			if busy[n] {
				return Verdict{Status: StatusNotTested, Kind: "nodes-busy"}
			}
		}
		return c.test(ctx, set)
	})
	if !reflect.DeepEqual(b.Bad, []string{nodes[1]}) || len(b.Suspects) != 0 || len(b.CheckErrors) != 0 {
		t.Fatalf("bisection %+v", b)
	}
	for _, n := range b.Good {
		if n == nodes[4] || n == nodes[7] {
			t.Fatalf("untested node %s cleared: %+v", n, b)
		}
	}
}
