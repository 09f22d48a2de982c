package advisor

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/store"
)

// copyProject copies testdata/project into a fresh directory.
func copyProject(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"train.sbatch", "train.py"} {
		data, err := os.ReadFile(filepath.Join("testdata", "project", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestForSubmitResubmissionAndCache(t *testing.T) {
	dir := copyProject(t)
	kv := newMemKV()
	req := SubmitRequest{Job: JobInfo{User: "alice", WorkDir: dir}, Script: filepath.Join(dir, "train.sbatch")}
	ctx := context.Background()

	first, err := ForSubmit(ctx, kv, req, Policy{SetTimeMin: true, SetNice: true}, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached {
		t.Error("first submission came from the cache")
	}
	if first.Estimate.Source != SourceTimeLimit || first.Estimate.EstimateS != 4*3600 {
		t.Errorf("empty history: got %s %v, want the 4h limit", first.Estimate.Source, first.Estimate.EstimateS)
	}
	for k, want := range map[string]string{"model": "bert-base-uncased", "dataset": "glue", "epochs": "3", "batch_size": "32"} {
		if got := first.Metadata[k]; got != want {
			t.Errorf("metadata %s = %q, want %q", k, got, want)
		}
	}

	// The job runs three times; each end is indexed as the end hook does.
	for i, dur := range []time.Duration{50 * time.Minute, 55 * time.Minute, 60 * time.Minute} {
		start := time.Unix(1700000000+int64(i)*10000, 0)
		job := &store.Job{JobID: string(rune('a' + i)), User: "alice", Name: "bert-ft", Partition: "gpu", WorkDir: dir,
			Start: start, End: start.Add(dur), State: "COMPLETED", TimeLimit: 4 * time.Hour, NumGPUs: 4, Metadata: first.Metadata}
		if err := IndexJobs(kv, job); err != nil {
			t.Fatal(err)
		}
	}
	again, err := ForSubmit(ctx, kv, req, Policy{SetTimeMin: true, SetNice: true}, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached {
		t.Error("unchanged resubmission was extracted again")
	}
	est := again.Estimate
	if est.Source != SourceResubmission || math.Abs(est.EstimateS-55*60) > 5*60 {
		t.Errorf("resubmission: got %s %v", est.Source, est.EstimateS)
	}
	if len(est.Matches) != 3 || !strings.HasPrefix(again.Comment, "schedmate: est=") {
		t.Errorf("matches %d, comment %q", len(est.Matches), again.Comment)
	}
	if again.Settings["time_min"] == "" {
		t.Errorf("no time_min suggested: %+v (confidence %.2f)", again.Settings, est.Confidence)
	}

	// Editing the entry script invalidates the cached extraction.
	if err := os.WriteFile(filepath.Join(dir, "train.py"), []byte("import torch\n# changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edited, err := ForSubmit(ctx, kv, req, Policy{}, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if edited.Cached {
		t.Error("edited entry script still served from the cache")
	}
}

func TestForSubmitBadScripts(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "bin.sbatch")
	if err := os.WriteFile(binary, []byte{0x7f, 'E', 'L', 'F', 0, 0, 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.sbatch")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{filepath.Join(dir, "missing.sbatch"), binary, empty} {
		adv, err := ForSubmit(context.Background(), newMemKV(),
			SubmitRequest{Job: JobInfo{User: "bob", WorkDir: dir, TimeLimitS: 600}, Script: script}, Policy{}, DefaultOptions())
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		if adv.Fingerprint != nil || len(adv.Notes) == 0 {
			t.Errorf("%s: want no fingerprint and a note, got %+v", script, adv)
		}
		if adv.Estimate.Source != SourceTimeLimit {
			t.Errorf("%s: source %s", script, adv.Estimate.Source)
		}
	}
}

func TestForSubmitHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := copyProject(t)
	_, err := ForSubmit(ctx, newMemKV(), SubmitRequest{Job: JobInfo{User: "a", WorkDir: dir}, Script: filepath.Join(dir, "train.sbatch")}, Policy{}, DefaultOptions())
	if err == nil {
		t.Error("cancelled context: no error")
	}
}

func TestLoadFromStore(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j := JobInfo{User: "alice", Name: "train", Command: "python train.py", Partition: "gpu"}
	var recs []Record
	for i := range 50 {
		recs = append(recs, ended(j, int64(i), float64(100+i), StateCompleted))
	}
	if err := Put(st, recs, nil); err != nil {
		t.Fatal(err)
	}
	est, err := Advise(st, &j, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if est.Source != SourceSimilar || est.EstimateS < 130 {
		t.Errorf("got %s %v, want recent similar runs (~140s)", est.Source, est.EstimateS)
	}
	if est.Matches[0].JobID != "" || est.Matches[0].DurationS != 149 {
		t.Errorf("newest match first: %+v", est.Matches[0])
	}
}
