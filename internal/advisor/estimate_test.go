package advisor

import (
	"fmt"
	"math"
	"testing"

	"github.com/schedmate/schedmate/internal/vector"
)

// ended builds an ended job record for tests.
func ended(j JobInfo, end int64, dur float64, state State) Record {
	return NewRecord(&j, end, dur, state, math.NaN(), math.NaN(), math.NaN())
}

func TestEstimateSources(t *testing.T) {
	train := JobInfo{User: "alice", Name: "train_llama", Partition: "gpu", WorkDir: "/home/alice/llm",
		Command: "torchrun train.py --config llama.yaml", TimeLimitS: 7200,
		Metadata: map[string]string{"model": "llama-7b", "dataset": "c4"}}
	other := JobInfo{User: "alice", Name: "preprocess", Partition: "cpu", WorkDir: "/home/alice/data",
		Command: "python prep.py", TimeLimitS: 600}
	bob := JobInfo{User: "bob", Name: "sim", Partition: "gpu", TimeLimitS: 3600}

	tests := []struct {
		name      string
		history   []Record
		query     JobInfo
		source    string
		estimate  float64
		tolerance float64
	}{
		{"empty history, no limit", nil, JobInfo{User: "carol", Name: "x"}, SourceNone, 0, 0},
		{"empty history, limit", nil, JobInfo{User: "carol", Name: "x", TimeLimitS: 3600}, SourceTimeLimit, 3600, 0},
		{"similar jobs", []Record{ended(train, 100, 3000, StateCompleted), ended(train, 200, 3200, StateCompleted), ended(train, 300, 3100, StateCompleted)},
			train, SourceSimilar, 3100, 101},
		{"user fallback", []Record{ended(other, 100, 300, StateCompleted)},
			JobInfo{User: "alice", Name: "eval", Partition: "cpu"}, SourceUser, 300, 0},
		{"partition fallback", []Record{ended(bob, 100, 1800, StateCompleted)},
			JobInfo{User: "dave", Name: "y", Partition: "gpu"}, SourcePartition, 1800, 0},
		{"global fallback", []Record{ended(bob, 100, 1800, StateCompleted)},
			JobInfo{User: "dave", Name: "y", Partition: "debug"}, SourceGlobal, 1800, 0},
		{"limit ratio", []Record{ended(bob, 100, 1800, StateCompleted), ended(bob, 110, 1800, StateCompleted), ended(bob, 120, 1800, StateCompleted)},
			JobInfo{User: "erin", Name: "z", Partition: "gpu", TimeLimitS: 1000}, SourceLimitRatio, 500, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := NewIndex()
			for _, r := range tc.history {
				ix.Add(r)
			}
			est := ix.Estimate(QueryOf(&tc.query), DefaultOptions())
			if est.Source != tc.source {
				t.Fatalf("source = %q, want %q (%+v)", est.Source, tc.source, est)
			}
			if math.Abs(est.EstimateS-tc.estimate) > tc.tolerance {
				t.Errorf("estimate = %v, want %v±%v", est.EstimateS, tc.estimate, tc.tolerance)
			}
			if est.LowS > est.EstimateS || est.HighS < est.EstimateS {
				t.Errorf("range %v-%v does not hold %v", est.LowS, est.HighS, est.EstimateS)
			}
			if est.Confidence < 0 || est.Confidence > 1 {
				t.Errorf("confidence %v out of [0,1]", est.Confidence)
			}
		})
	}
}

func TestNamedProgramFallback(t *testing.T) {
	prog := func(logical, class string) JobInfo {
		return JobInfo{User: "alice", Name: logical + "-run", LogicalName: logical, Class: class}
	}
	t.Run("user's jobs of the same class decide", func(t *testing.T) {
		ix := NewIndex()
		ix.Add(ended(prog("serve", "3"), 1, 5000, StateCompleted))
		ix.Add(ended(prog("serve", "3"), 2, 5200, StateCompleted))
		for i := int64(3); i < 8; i++ {
			ix.Add(ended(prog("batch", "0"), i, 100, StateCompleted))
		}
		q := prog("frontend", "3")
		est := ix.Estimate(QueryOf(&q), DefaultOptions())
		if est.Source != SourceUser || est.EstimateS < 5000 {
			t.Errorf("estimate %v from %s, want the class-3 jobs' ~5000 from %s", est.EstimateS, est.Source, SourceUser)
		}
	})
	t.Run("a colliding program is not similar", func(t *testing.T) {
		q := prog("frontend", "3")
		qv := Embed(&q)
		var other JobInfo
		for i := 0; ; i++ {
			other = prog(fmt.Sprintf("p%d", i), "3")
			if v := Embed(&other); vector.Cosine(&qv, &v) >= DefaultOptions().Threshold {
				break
			}
		}
		ix := NewIndex()
		ix.Add(ended(other, 1, 9000, StateCompleted))
		est := ix.Estimate(QueryOf(&q), DefaultOptions())
		if est.Source != SourceUser {
			t.Errorf("source = %s, want %s: %s shares only a hash slot", est.Source, SourceUser, other.LogicalName)
		}
	})
}

func TestEstimateStateAware(t *testing.T) {
	j := JobInfo{User: "alice", Name: "train", Command: "python train.py", WorkDir: "/w"}
	ix := NewIndex()
	// two runs completed at ~10h, two were cancelled after minutes
	ix.Add(ended(j, 1, 36000, StateCompleted))
	ix.Add(ended(j, 2, 120, StateCancelled))
	ix.Add(ended(j, 3, 35000, StateCompleted))
	ix.Add(ended(j, 4, 90, StateFailed))
	est := ix.Estimate(QueryOf(&j), DefaultOptions())
	if est.CompleteS < 30000 {
		t.Errorf("complete_s = %v, want the completed runs' ~35000", est.CompleteS)
	}
	if est.PEarly < 0.3 || est.PEarly > 0.7 {
		t.Errorf("p_early = %v, want about one half", est.PEarly)
	}
	if len(est.Matches) != 3 {
		t.Errorf("matches = %d, want top 3", len(est.Matches))
	}
}

func TestGPUFiguresAveraged(t *testing.T) {
	j := JobInfo{User: "alice", Name: "train", Command: "python train.py"}
	ix := NewIndex()
	ix.Add(NewRecord(&j, 1, 100, StateCompleted, 80, 40, 0.5))
	ix.Add(NewRecord(&j, 2, 100, StateCompleted, 60, 20, 0.3))
	ix.Add(NewRecord(&j, 3, 100, StateCompleted, math.NaN(), math.NaN(), math.NaN()))
	est := ix.Estimate(QueryOf(&j), DefaultOptions())
	if est.GPUUtil == nil || *est.GPUUtil < 60 || *est.GPUUtil > 80 {
		t.Errorf("gpu util = %v", est.GPUUtil)
	}
	if est.StepTimeS == nil || est.GPUMemGB == nil {
		t.Errorf("step time or memory missing: %+v", est)
	}
}

func TestLogicalName(t *testing.T) {
	for in, want := range map[string]string{
		"run_seed3":     "run_seed#",
		"resnet50-e100": "resnet#-e#",
		"train":         "train",
		"":              "",
	} {
		if got := LogicalName(in); got != want {
			t.Errorf("LogicalName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNiceFavoursShortJobs(t *testing.T) {
	if Nice(600) != 0 || Nice(7200) != 100 || Nice(1e9) != 1000 {
		t.Errorf("Nice: %d %d %d", Nice(600), Nice(7200), Nice(1e9))
	}
}
