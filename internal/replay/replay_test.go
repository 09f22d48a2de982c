package replay

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/shareddata"
	"github.com/schedmate/schedmate/internal/trace"
)

// recorder predicts the number of jobs it has observed, so tests can see
// exactly what history each prediction had.
type recorder struct{ seen []string }

func (r *recorder) Name() string                       { return "recorder" }
func (r *recorder) Predict(*trace.Job) (float64, bool) { return float64(len(r.seen)), true }
func (r *recorder) Observe(j *trace.Job)               { r.seen = append(r.seen, j.ID) }

func TestRunUsesOnlyEndedJobs(t *testing.T) {
	jobs := []trace.Job{
		{ID: "a", Submit: 0, Start: 0, End: 100},
		{ID: "b", Submit: 10, Start: 10, End: 20},
		{ID: "c", Submit: 50, Start: 50, End: 60},    // b ended, a still running
		{ID: "d", Submit: 100, Start: 100, End: 110}, // a ends exactly at d's submit
	}
	rec := &recorder{}
	var got []float64
	_, err := Run(context.Background(), jobs, []Predictor{rec}, Options{
		OnPrediction: func(_ *trace.Job, p []float64) { got = append(got, p[0]) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 0, 1, 3}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("history sizes = %v, want %v", got, want)
		}
	}
}

func TestScores(t *testing.T) {
	var s scorer
	for _, c := range []struct{ pred, actual float64 }{
		{100, 100}, // exact
		{250, 100}, // 2.5x over: outside both
		{40, 100},  // 2.5x under: outside 2x, within 100%
		{0.2, 0.5}, // sub-second jobs floored to 1s: exact
	} {
		s.add(c.pred, true, c.actual)
	}
	s.add(math.NaN(), false, 100) // no answer: not scored
	got := s.scores(5)
	if got.Predicted != 4 || got.Coverage != 0.8 || got.Within2x != 0.5 || got.Within100 != 0.75 {
		t.Errorf("scores = %+v", got)
	}
}

// sampleSWF reads the SWF sample trace.
func sampleSWF(t *testing.T) []trace.Job {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "trace", "testdata", "sample.swf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := trace.Read(f, "swf")
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func TestBaselinesOnSWF(t *testing.T) {
	jobs := sampleSWF(t)
	preds := append([]Predictor{Schedmate(advisor.DefaultOptions())}, Baselines(jobs)...)
	res, err := Run(context.Background(), jobs, preds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"schedmate", "time_limit", "user_last2_mean", "user_last5_median", "user_name_median", "global_median"} {
		s, ok := res.Methods[name]
		if !ok {
			t.Fatalf("method %s missing: %v", name, res.Order)
		}
		if s.Predicted == 0 || s.Within2x < 0 || s.Within2x > 1 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if _, ok := res.Methods["user_logical_median"]; ok {
		t.Error("logical-name baseline on a trace without logical names")
	}
}

func TestGlobalMedian(t *testing.T) {
	var g globalMedian
	if _, ok := g.Predict(nil); ok {
		t.Fatal("empty median answered")
	}
	for i, d := range []float64{5, 1, 9, 3} {
		g.add(d)
		want := []float64{5, 3, 5, 4}[i]
		if got, _ := g.Predict(nil); got != want {
			t.Errorf("after %d: median %v, want %v", i+1, got, want)
		}
	}
}

// replayShared replays one shared trace with schedmate and the baselines.
func replayShared(tb testing.TB, path, format string) *Result {
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	jobs, err := trace.Read(f, format)
	if err != nil {
		tb.Fatal(err)
	}
	preds := append([]Predictor{Schedmate(advisor.DefaultOptions())}, Baselines(jobs)...)
	res, err := Run(context.Background(), jobs, preds, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

func TestReplaySharedTracesBeatBaselines(t *testing.T) {
	if testing.Short() {
		t.Skip("shared-trace replays skipped in -short mode")
	}
	dir := shareddata.Dir(t, "traces")
	for _, tc := range []struct{ path, format string }{
		{filepath.Join("google2011", "jobs.csv"), "google"},
		{filepath.Join("eagle-sample", "jobs.csv"), "eagle"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			res := replayShared(t, filepath.Join(dir, tc.path), tc.format)
			sm := res.Methods["schedmate"]
			for _, name := range res.Order {
				s := res.Methods[name]
				t.Logf("%-20s within2x %.4f within100 %.4f medrel %.3f mae %.0f", name, s.Within2x, s.Within100, s.MedianRelErr, s.MAESeconds)
				if name != "schedmate" && (s.Within2x >= sm.Within2x || s.Within100 >= sm.Within100) {
					t.Errorf("%s (%.4f, %.4f) not beaten by schedmate (%.4f, %.4f)", name, s.Within2x, s.Within100, sm.Within2x, sm.Within100)
				}
			}
		})
	}
}

// BenchmarkReplayGoogle replays the 172k-job Google trace with schedmate and
// every baseline.
func BenchmarkReplayGoogle(b *testing.B) {
	dir := shareddata.Dir(b, "traces")
	for b.Loop() {
		replayShared(b, filepath.Join(dir, "google2011", "jobs.csv"), "google")
	}
}

// startRecorder predicts how many jobs have started and not ended.
type startRecorder struct{ running map[string]bool }

func (r *startRecorder) Name() string                       { return "starts" }
func (r *startRecorder) Predict(*trace.Job) (float64, bool) { return float64(len(r.running)), true }
func (r *startRecorder) Observe(j *trace.Job)               { delete(r.running, j.ID) }
func (r *startRecorder) Started(j *trace.Job)               { r.running[j.ID] = true }

func TestRunReportsStartedJobs(t *testing.T) {
	jobs := []trace.Job{
		{ID: "a", Submit: 0, Start: 5, End: 100},
		{ID: "b", Submit: 1, Start: 50, End: 60},
		{ID: "c", Submit: 10, Start: 10, End: 20}, // a running, b queued
		{ID: "d", Submit: 55, Start: 55, End: 56}, // a, b running; c ended
		{ID: "e", Submit: 70, Start: 70, End: 80}, // a running
	}
	rec := &startRecorder{running: map[string]bool{}}
	var got []float64
	_, err := Run(context.Background(), jobs, []Predictor{rec}, Options{
		OnPrediction: func(_ *trace.Job, p []float64) { got = append(got, p[0]) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 0, 1, 2, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("running counts = %v, want %v", got, want)
		}
	}
}
