package history

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
)

func openStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "schedmate.db")
	st, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func submission(at time.Time, hash string) *Submission {
	return &Submission{
		UID: "1000", User: "alice", Name: "train", WorkDir: "/home/alice/exp", Partition: "gpu",
		Script: "/home/alice/exp/run.sh", Argv: []string{"sbatch", "run.sh"}, TimeLimit: 2 * time.Hour,
		Gres: "gpu:4", Time: at, FingerprintHash: hash,
		Estimate: &store.EstimateRecord{EstimateS: 3000, Source: "similar", Confidence: 0.9},
	}
}

func endAt(t *testing.T, overrides map[string]string) *End {
	t.Helper()
	e, err := EndFromEnv(epilogEnv(overrides))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRecordEndMatchesSubmission(t *testing.T) {
	st, _ := openStore(t)
	start := time.Unix(1700000100, 0)
	// Two earlier submissions of the same job: the most recent one before
	// the start matches; one made after the job started never does.
	for _, s := range []*Submission{
		submission(start.Add(-2*time.Hour), "old"),
		submission(start.Add(-time.Minute), "recent"),
		submission(start.Add(time.Hour), "later"),
	} {
		if err := RecordSubmission(st, s); err != nil {
			t.Fatal(err)
		}
	}
	job, err := RecordEnd(st, endAt(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if job.FingerprintHash != "recent" || job.TimeLimit != 2*time.Hour || job.NumGPUs != 8 ||
		job.Estimate == nil || job.Script != "/home/alice/exp/run.sh" || job.SubmitLine != "sbatch run.sh" || job.State != "COMPLETED" {
		t.Fatalf("job = %+v", job)
	}
	if !job.Submit.Equal(start.Add(-time.Minute)) {
		t.Errorf("submit = %v, want the submission time", job.Submit)
	}
	// The next end of a different job takes the remaining earlier one.
	next, err := RecordEnd(st, endAt(t, map[string]string{"SLURM_JOB_ID": "4243"}))
	if err != nil {
		t.Fatal(err)
	}
	if next.FingerprintHash != "old" {
		t.Errorf("second job matched %q, want old", next.FingerprintHash)
	}
	// A third has nothing left to match and is still recorded.
	third, err := RecordEnd(st, endAt(t, map[string]string{"SLURM_JOB_ID": "4244"}))
	if err != nil {
		t.Fatal(err)
	}
	if third.FingerprintHash != "" || third.State != "COMPLETED" {
		t.Errorf("unmatched job = %+v", third)
	}
}

func TestRecordEndForgetsOldSubmissions(t *testing.T) {
	st, _ := openStore(t)
	start := time.Unix(1700000100, 0)
	if err := RecordSubmission(st, submission(start.Add(-submissionTTL-time.Hour), "ancient")); err != nil {
		t.Fatal(err)
	}
	job, err := RecordEnd(st, endAt(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if job.FingerprintHash != "" {
		t.Errorf("matched a submission older than the TTL: %+v", job)
	}
	n := 0
	if err := st.ScanKV(submissionsBucket, "", func(string, []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d old submissions kept", n)
	}
}

func TestRecordEndArrayTasksShareSubmission(t *testing.T) {
	st, _ := openStore(t)
	if err := RecordSubmission(st, submission(time.Unix(1700000000, 0), "array")); err != nil {
		t.Fatal(err)
	}
	for i, task := range []string{"0", "1", "2"} {
		job, err := RecordEnd(st, endAt(t, map[string]string{
			"SLURM_JOB_ID": "50" + task, "SLURM_ARRAY_JOB_ID": "500", "SLURM_ARRAY_TASK_ID": task,
		}))
		if err != nil {
			t.Fatal(err)
		}
		if job.FingerprintHash != "array" || job.JobID != "500_"+task {
			t.Errorf("task %d = %+v", i, job)
		}
	}
}

func TestRecordEndIdempotentAndKeepsOtherFacts(t *testing.T) {
	st, _ := openStore(t)
	if err := RecordSubmission(st, submission(time.Unix(1700000000, 0), "h")); err != nil {
		t.Fatal(err)
	}
	end := endAt(t, map[string]string{"SLURM_JOB_EXIT_CODE2": "1:0"})
	if _, err := RecordEnd(st, end); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateJob("4242", func(j *store.Job) error {
		j.Diagnosis = &store.Diagnosis{Category: "script"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	again, err := RecordEnd(st, end)
	if err != nil {
		t.Fatal(err)
	}
	if again.FingerprintHash != "h" || again.Diagnosis == nil || again.State != "FAILED" || again.ExitCode != 1 {
		t.Fatalf("after second record: %+v", again)
	}
	// A requeued run that then succeeds overwrites the exit status.
	ok, err := RecordEnd(st, endAt(t, map[string]string{"SLURM_JOB_RESTART_COUNT": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if ok.State != "COMPLETED" || ok.ExitCode != 0 || ok.RequeueCount != 1 || ok.FingerprintHash != "h" {
		t.Fatalf("after requeued success: %+v", ok)
	}
}

func TestRecordEndTimeoutFromSubmittedLimit(t *testing.T) {
	st, _ := openStore(t)
	sub := submission(time.Unix(1700000000, 0), "h")
	sub.TimeLimit = time.Hour // the env's run lasts exactly one hour
	if err := RecordSubmission(st, sub); err != nil {
		t.Fatal(err)
	}
	job, err := RecordEnd(st, endAt(t, map[string]string{"SLURM_JOB_EXIT_CODE2": "0:15"}))
	if err != nil {
		t.Fatal(err)
	}
	if job.State != "TIMEOUT" {
		t.Errorf("state = %s, want TIMEOUT", job.State)
	}
}

func TestRecordSubmissionValidates(t *testing.T) {
	st, _ := openStore(t)
	tests := []*Submission{
		{Name: "x", Time: time.Now()},
		{UID: "1", Name: "x"},
	}
	for _, s := range tests {
		if err := RecordSubmission(st, s); err == nil {
			t.Errorf("RecordSubmission(%+v) succeeded", s)
		}
	}
}

// lockedOpener opens a second handle on path, which the test holds locked.
func lockedOpener(path string) OpenFunc {
	return func() (*store.Store, error) {
		return store.Open(path, store.Options{Timeout: 50 * time.Millisecond})
	}
}

func TestCaptureSpoolsWhenLockedAndDrainsLater(t *testing.T) {
	st, path := openStore(t) // held open: the lock is taken
	dir := spool.ForStore(path)
	ctx := context.Background()

	out, err := CaptureSubmission(ctx, lockedOpener(path), Places{Spool: dir}, submission(time.Unix(1700000000, 0), "spooled"))
	if err != nil || !out.Spooled || !errors.Is(out.StoreErr, store.ErrLocked) {
		t.Fatalf("CaptureSubmission = %+v, %v", out, err)
	}
	job, out, err := CaptureEnd(ctx, lockedOpener(path), Places{Spool: dir}, endAt(t, map[string]string{"SLURM_JOB_EXIT_CODE2": "0:125"}))
	if err != nil || !out.Spooled {
		t.Fatalf("CaptureEnd = %+v, %v", out, err)
	}
	if job.JobID != "4242" || job.State != "OUT_OF_MEMORY" {
		t.Errorf("spooled job handed on = %+v", job)
	}
	if _, err := st.GetJob("4242"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("job reached the store while it was locked: %v", err)
	}

	res, err := DrainSpool(st, dir)
	if err != nil || res.Applied != 2 {
		t.Fatalf("DrainSpool = %+v, %v", res, err)
	}
	got, err := st.GetJob("4242")
	if err != nil || got.FingerprintHash != "spooled" || got.State != "OUT_OF_MEMORY" {
		t.Fatalf("drained job = %+v, %v", got, err)
	}
	if res, err := DrainSpool(st, dir); err != nil || res.Applied != 0 {
		t.Fatalf("second drain = %+v, %v", res, err)
	}
}

func TestCaptureWritesStoreAndDrainsFirst(t *testing.T) {
	st, path := openStore(t)
	dir := spool.ForStore(path)
	if err := spool.New(dir).Write(kindSubmission, submission(time.Unix(1700000000, 0), "from-spool")); err != nil {
		t.Fatal(err)
	}
	if err := spool.New(dir).Write("future-kind", map[string]int{"x": 1}); err != nil {
		t.Fatal(err)
	}
	open := func() (*store.Store, error) { return st, nil }
	job, out, err := CaptureEnd(context.Background(), open, Places{Spool: dir}, endAt(t, nil))
	if err != nil || out.Spooled || out.Drained.Applied != 1 || out.Drained.SetAside != 1 {
		t.Fatalf("CaptureEnd = %+v, %v", out, err)
	}
	if job.FingerprintHash != "from-spool" {
		t.Errorf("job = %+v, want it matched to the drained submission", job)
	}
}

func TestCaptureSpoolsAtDeadline(t *testing.T) {
	_, path := openStore(t)
	dir := spool.ForStore(path)
	release := make(chan struct{})
	defer close(release)
	slow := func() (*store.Store, error) { <-release; return nil, errors.New("too late") }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	out, err := CaptureSubmission(ctx, slow, Places{Spool: dir}, submission(time.Unix(1700000000, 0), "h"))
	if err != nil || !out.Spooled || !errors.Is(out.StoreErr, context.DeadlineExceeded) {
		t.Fatalf("CaptureSubmission = %+v, %v", out, err)
	}
}

func TestCaptureRefusesIncompleteRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	never := func() (*store.Store, error) { t.Fatal("store opened for an incomplete record"); return nil, nil }
	if _, err := CaptureSubmission(context.Background(), never, Places{Spool: dir}, &Submission{Name: "x", Time: time.Now()}); err == nil {
		t.Error("submission without user accepted")
	}
	if _, _, err := CaptureEnd(context.Background(), never, Places{Spool: dir}, &End{}); err == nil {
		t.Error("end without job id accepted")
	}
	if pending, _ := spool.New(dir).Pending(); len(pending) != 0 {
		t.Errorf("incomplete records spooled: %v", pending)
	}
}

func TestCaptureFailsOnlyWhenNothingCanBeWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.WriteFile(dir, nil, 0o600); err != nil { // a file where the spool directory should be
		t.Fatal(err)
	}
	broken := func() (*store.Store, error) { return nil, store.ErrCorrupt }
	_, err := CaptureSubmission(context.Background(), broken, Places{Spool: dir}, submission(time.Unix(1700000000, 0), "h"))
	if err == nil {
		t.Fatal("CaptureSubmission reported success with neither store nor spool")
	}
}

func TestRecordEndCompletedFromSlurm(t *testing.T) {
	at := time.Unix(1700000000, 0).UTC()
	tests := []struct {
		name      string
		env       map[string]string
		slurm     slurm.Job
		wantState string
		wantSig   int
	}{
		// scancel while running: 0:0 in the environment, 0:15 and
		// COMPLETING in scontrol while the epilog runs.
		{"cancelled", nil, slurm.Job{State: "COMPLETING", Signal: 15}, "CANCELLED", 15},
		{"final state wins", nil, slurm.Job{State: "NODE_FAIL"}, "NODE_FAIL", 0},
		{"environment status kept", map[string]string{"SLURM_JOB_EXIT_CODE2": "3:0"}, slurm.Job{State: "COMPLETING", Signal: 9}, "FAILED", 0},
		{"no answer", nil, slurm.Job{}, "COMPLETED", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := openStore(t)
			end := endAt(t, tt.env)
			end.Job.Submit = time.Time{}
			tt.slurm.Submit = at
			end.CompleteFromSlurm(&tt.slurm)
			job, err := RecordEnd(st, end)
			if err != nil {
				t.Fatal(err)
			}
			if job.State != tt.wantState || job.Signal != tt.wantSig || !job.Submit.Equal(at) {
				t.Errorf("job = %s signal %d submit %v, want %s signal %d submit %v", job.State, job.Signal, job.Submit, tt.wantState, tt.wantSig, at)
			}
		})
	}
}

func TestRecordEndAgainKeepsSlurmState(t *testing.T) {
	st, _ := openStore(t)
	end := endAt(t, nil)
	if _, err := RecordEnd(st, end); err != nil {
		t.Fatal(err)
	}
	// Slurm's final word arrives after the end was recorded.
	if err := st.UpdateJob(end.Job.JobID, func(j *store.Job) error { j.State = "PREEMPTED"; return nil }); err != nil {
		t.Fatal(err)
	}
	job, err := RecordEnd(st, end) // the same end, read again from the spool
	if err != nil || job.State != "PREEMPTED" {
		t.Fatalf("re-recorded end = %+v, %v", job, err)
	}
	next, err := RecordEnd(st, endAt(t, map[string]string{"SLURM_JOB_RESTART_COUNT": "1"}))
	if err != nil || next.State != "COMPLETED" {
		t.Fatalf("end of the requeued run = %+v, %v", next, err)
	}
}
