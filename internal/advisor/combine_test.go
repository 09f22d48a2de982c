package advisor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// cand builds a candidate of one duration and weight for tests.
func cand(d, w float64, censored bool) candidate {
	return candidate{rec: &Record{DurationS: float32(d)}, w: w, censored: censored}
}

func TestSurvival(t *testing.T) {
	all := func(*candidate) bool { return true }
	tests := []struct {
		name string
		c    []candidate
		want []share
	}{
		{"none", nil, nil},
		{"ended only, by weight", []candidate{cand(300, 1, false), cand(100, 3, false)},
			[]share{{100, 0.75}, {300, 0.25}}},
		{"a running job passes its weight to longer runs", []candidate{cand(100, 1, false), cand(150, 1, true), cand(300, 1, false), cand(400, 1, false)},
			[]share{{100, 0.25}, {300, 0.375}, {400, 0.375}}},
		{"what is left beyond every run goes to the longest elapsed time", []candidate{cand(100, 1, false), cand(500, 1, true), cand(900, 2, true)},
			[]share{{100, 0.25}, {900, 0.75}}},
		{"a run that ended is not outlived by one still going as long", []candidate{cand(100, 1, true), cand(100, 1, false)},
			[]share{{100, 0.5}, {100, 0.5}}},
		{"a weight lost to rounding", []candidate{cand(100, 1, true), cand(200, 1e-17, false)},
			[]share{{200, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := survival(tc.c, all)
			if len(got) != len(tc.want) {
				t.Fatalf("shares %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i].d != tc.want[i].d || math.Abs(got[i].p-tc.want[i].p) > 1e-12 {
					t.Fatalf("shares %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	s := []share{{100, 0.25}, {200, 0.25}, {400, 0.5}}
	for _, tc := range []struct{ q, want float64 }{{0, 100}, {0.1, 100}, {0.25, 100}, {0.3, 200}, {0.5, 200}, {0.9, 400}, {1, 400}} {
		if got := quantile(s, tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := quantile(nil, 0.5); got != 0 {
		t.Errorf("quantile of nothing = %v", got)
	}
}

func TestPointEstimate(t *testing.T) {
	tests := []struct {
		name     string
		s        []share
		min, max float64
	}{
		{"nothing", nil, 0, 0},
		{"one duration", []share{{600, 1}}, 600, 600},
		{"equal durations", []share{{3000, 0.5}, {3000, 0.3}, {3000, 0.2}}, 3000, 3000},
		{"sub-second runs count as one second", []share{{0.2, 1}}, 1, 1},
		{"a cluster's middle", []share{{3000, 0.4}, {3100, 0.3}, {3200, 0.3}}, 3050, 3150},
		{"the heavier cluster", []share{{100, 0.7}, {10_000, 0.3}}, 100, 100},
		{"equal clusters: the shorter", []share{{100, 0.5}, {10_000, 0.5}}, 100, 100},
		{"within 2x of two close clusters", []share{{100, 0.5}, {300, 0.5}}, 150, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pointEstimate(tc.s); got < tc.min || got > tc.max {
				t.Errorf("estimate %v, want in [%v, %v]", got, tc.min, tc.max)
			}
		})
	}
}

// pointScore is pointEstimate's objective at p, computed directly.
func pointScore(s []share, p float64) float64 {
	var sum float64
	x := math.Log(p)
	for _, v := range s {
		l := math.Log(max(v.d, 1))
		lo, hi := l-rerunSpread, l+rerunSpread
		within := max(0, min(hi, x+math.Ln2)-max(lo, x-math.Ln2))
		notOver := max(0, hi-max(lo, x-math.Ln2))
		sum += v.p * (within + notOver)
	}
	return sum
}

func TestPointEstimateIsBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		s := make([]share, 1+rng.IntN(12))
		var total float64
		for i := range s {
			s[i] = share{math.Exp(rng.Float64() * 10), rng.Float64()}
			total += s[i].p
		}
		for i := range s {
			s[i].p /= total
		}
		got := pointScore(s, pointEstimate(s))
		for x := -1.0; x < 11; x += 0.01 {
			if v := pointScore(s, math.Exp(x)); v > got+1e-9 {
				t.Fatalf("%v: estimate scores %v, %v scores %v", s, got, math.Exp(x), v)
			}
		}
	}
}
