package jobend

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
	"github.com/schedmate/schedmate/slurm/slurmfake"
)

const (
	progressLog = "iter 1: loss 3.9, time 500.00ms\niter 2: loss 3.8, time 500.00ms\niter 3: loss 3.7, time 500.00ms\n"
	userBug     = "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    main()\nNameError: name 'main' is not defined\n"
	networkBug  = "n1:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<5> with error 12, opcode 0, len 0, vendor err 129 (Recv)\nRuntimeError: NCCL communicator was aborted on rank 0. NCCL error: remote process exited or there was a network error\n"
	fakeXid     = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\nRuntimeError: CUDA error: unspecified launch failure\n"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name         string
		state        string
		log          string
		evidence     bool // trusted NVML evidence against the job's node
		requeues     int
		wantCategory string
		wantCalls    map[string]int
	}{
		{"completed job: metrics only", "COMPLETED", progressLog, false, 0, "", map[string]int{"Requeue": 0, "SetComment": 0, "DrainNode": 0}},
		{"user bug: comment, no requeue", "FAILED", progressLog + userBug, false, 0, "script", map[string]int{"Requeue": 0, "SetComment": 1, "DrainNode": 0}},
		{"network fault: requeue away from the node", "FAILED", progressLog + networkBug, false, 0, "infrastructure", map[string]int{"Requeue": 1, "SetComment": 1, "DrainNode": 0}},
		{"network fault past the limit: no requeue", "FAILED", progressLog + networkBug, false, 2, "infrastructure", map[string]int{"Requeue": 0, "SetComment": 1, "DrainNode": 0}},
		{"user-printed Xid alone never drains", "FAILED", progressLog + fakeXid, false, 0, "infrastructure", map[string]int{"DrainNode": 0}},
		{"Xid with trusted node evidence drains", "FAILED", progressLog + fakeXid, true, 0, "infrastructure", map[string]int{"DrainNode": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			logPath := filepath.Join(dir, "job.out")
			if err := os.WriteFile(logPath, []byte(tt.log), 0o644); err != nil {
				t.Fatal(err)
			}
			st, err := store.Open(filepath.Join(dir, "db"), store.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			now := time.Now()
			job := &store.Job{JobID: "7", User: "alice", Partition: "gpu", Name: "train", State: tt.state,
				Nodes: []string{"n1"}, StdOut: logPath, Start: now.Add(-time.Minute), End: now, RequeueCount: tt.requeues}
			if err := st.PutJob(job); err != nil {
				t.Fatal(err)
			}
			if tt.evidence {
				if err := st.AddEvidence(store.Evidence{Node: "n1", Time: now, Source: "nvml", Check: "xid", OK: false, Trusted: true, Summary: "Xid 79: GPU has fallen off the bus"}); err != nil {
					t.Fatal(err)
				}
			}
			held := false // whether the steps hold the database
			fake := slurmfake.New(slurmfake.WithGPUNodes("n", 10, 4), slurmfake.WithJobs(slurm.Job{ID: "7", State: tt.state, Partition: "gpu", Nodes: []string{"n1"}}),
				slurmfake.WithInterceptor("*", func(_ context.Context, c slurmfake.Call) error {
					if held {
						t.Errorf("Slurm called (%s) while the database is held", c.Verb)
					}
					return nil
				}))
			cfg := config.Default()
			deps := Deps{
				OpenStore:    func() (*store.Store, error) { held = true; return st, nil },
				ReleaseStore: func() { held = false },
				Cluster:      fake, Config: cfg, Now: func() time.Time { return now },
			}
			out, err := Run(context.Background(), deps, job)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if out.Metrics == nil || out.Metrics.StepTimeS < 0.45 || out.Metrics.StepTimeS > 0.55 {
				t.Errorf("final metrics = %+v, want a 0.5 s step time", out.Metrics)
			}
			got := ""
			if out.Diagnosis != nil {
				got = out.Diagnosis.Category
			}
			if got != tt.wantCategory {
				t.Errorf("category = %q, want %q (plan notes %v)", got, tt.wantCategory, out.Plan.Notes)
			}
			for verb, n := range tt.wantCalls {
				if c := len(fake.CallsTo(verb)); c != n {
					t.Errorf("%s calls = %d, want %d (plan %+v)", verb, c, n, out.Plan)
				}
			}
			saved, err := st.GetJob("7")
			if err != nil {
				t.Fatal(err)
			}
			if saved.Metrics == nil {
				t.Error("final metrics not recorded in history")
			}
			if tt.wantCategory != "" && (saved.Diagnosis == nil || saved.Diagnosis.Category != tt.wantCategory) {
				t.Errorf("recorded diagnosis = %+v", saved.Diagnosis)
			}
		})
	}
}

func TestRunDryRunActsOnNothing(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "job.out")
	os.WriteFile(logPath, []byte(progressLog+networkBug), 0o644)
	st, err := store.Open(filepath.Join(dir, "db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	job := &store.Job{JobID: "8", State: "FAILED", Nodes: []string{"n1"}, StdOut: logPath, End: time.Now()}
	st.PutJob(job)
	fake := slurmfake.New(slurmfake.WithGPUNodes("n", 4, 4))
	if _, err := Run(context.Background(), Deps{OpenStore: func() (*store.Store, error) { return st, nil }, ReleaseStore: func() {}, Cluster: fake, Config: config.Default(), DryRun: true}, job); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"Requeue", "SetComment", "DrainNode"} {
		if n := len(fake.CallsTo(verb)); n != 0 {
			t.Errorf("dry run called %s %d times", verb, n)
		}
	}
	entries, err := st.AuditEntries(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 || !entries[0].DryRun {
		t.Errorf("dry run must still audit what it would do: %+v", entries)
	}
}
