package advisor

import (
	"math"
	"testing"
)

func TestRunningJobsRaiseTheEstimate(t *testing.T) {
	job := JobInfo{ID: "1", User: "alice", Name: "train", Partition: "gpu", Command: "python train.py"}
	tests := []struct {
		name    string
		ended   int     // similar jobs that ended after 100s
		running int     // similar jobs running since t=0
		now     int64   // query time
		min     float64 // estimate at least
		max     float64 // estimate at most
	}{
		{"no running jobs", 3, 0, 10_000, 100, 100},
		{"running jobs ignored without a query time", 3, 40, 0, 100, 100},
		{"long running jobs outweighing the ended ones", 1, 40, 10_000, 10_000, 10_000},
		// 100s under-estimates the running jobs, 10000s would over-estimate the ended ones
		{"long running jobs outweighed by the ended ones", 3, 40, 10_000, 100, 100},
		{"short elapsed times change nothing", 3, 40, 50, 100, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := NewIndex()
			for i := range tc.ended {
				j := job
				j.ID = string(rune('a' + i))
				ix.Add(ended(j, int64(i), 100, StateCompleted))
			}
			for i := range tc.running {
				j := job
				j.ID = "r" + string(rune('a'+i))
				ix.Started(&j, 0)
			}
			q := QueryOf(&job)
			q.Now = tc.now
			est := ix.Estimate(q, DefaultOptions())
			if est.EstimateS < tc.min || est.EstimateS > tc.max {
				t.Errorf("estimate %v, want in [%v, %v]", est.EstimateS, tc.min, tc.max)
			}
		})
	}
}

func TestEndedJobLeavesRunning(t *testing.T) {
	ix := NewIndex()
	j := JobInfo{ID: "7", User: "alice", Name: "train"}
	ix.Started(&j, 0)
	ix.Add(ended(j, 100, 100, StateCompleted))
	if len(ix.running) != 0 {
		t.Errorf("running jobs left: %v", ix.running)
	}
}

func TestLimitRatioShrinksTowardsCluster(t *testing.T) {
	other := JobInfo{User: "bob", Name: "sim", Partition: "gpu", TimeLimitS: 1000}
	alice := JobInfo{User: "alice", Name: "a", Partition: "gpu", TimeLimitS: 1000}
	ix := NewIndex()
	for i := range 3 {
		ix.Add(ended(other, int64(i), 400, StateCompleted)) // cluster uses 40%
	}
	ix.Add(ended(alice, 10, 100, StateCompleted)) // alice once used 10%
	query := JobInfo{User: "alice", Name: "new", Partition: "gpu", TimeLimitS: 1000}
	est := ix.Estimate(QueryOf(&query), Options{Threshold: 0.99, UserThreshold: 0.99})
	if est.Source != SourceLimitRatio {
		t.Fatalf("source %q", est.Source)
	}
	// global median of {0.4, 0.4, 0.4, 0.1} is 0.4; one own run pulls it to sqrt(0.1*0.4) = 0.2
	if want := 200.0; math.Abs(est.EstimateS-want) > 1 {
		t.Errorf("estimate %v, want %v", est.EstimateS, want)
	}
	// a limit the user never asked for keeps the cluster's fraction
	query.TimeLimitS = 10_000
	if est := ix.Estimate(QueryOf(&query), Options{Threshold: 0.99, UserThreshold: 0.99}); math.Abs(est.EstimateS-4000) > 1 {
		t.Errorf("new limit: estimate %v, want 4000", est.EstimateS)
	}
}
