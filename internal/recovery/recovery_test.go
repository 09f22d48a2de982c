package recovery

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/store"
)

var policy = Policy{MinConfidence: 0.7, MaxRequeues: 2, MaxDrainFraction: 0.1, AutoRequeue: true}

func gpuDiag(conf float64) *store.Diagnosis {
	return &store.Diagnosis{Category: "infrastructure", Component: "gpu", Line: 12, Text: "NVRM: Xid 79, GPU has fallen off the bus", Confidence: conf}
}

func badGPU(node string, trusted bool) []store.Evidence {
	return []store.Evidence{{Node: node, Source: "xid", Check: "xid", OK: false, Trusted: trusted, Summary: "Xid 79"}}
}

func kinds(p Plan) []string {
	var out []string
	for _, a := range p.Actions {
		out = append(out, string(a.Kind)+":"+a.Target)
	}
	return out
}

func TestDecide(t *testing.T) {
	job := func(requeues int, nodes ...string) *store.Job {
		return &store.Job{JobID: "42", Nodes: nodes, RequeueCount: requeues}
	}
	tests := []struct {
		name string
		in   Input
		want []string
	}{
		{"no failure", Input{Job: job(0, "n1"), Diagnosis: &store.Diagnosis{Category: "none"}}, nil},
		{"script gets a comment only", Input{Job: job(0, "n1"), Diagnosis: &store.Diagnosis{Category: "script", Text: "NameError"}}, []string{"comment:42"}},
		{"framework gets a comment only", Input{Job: job(0, "n1"), Diagnosis: &store.Diagnosis{Category: "framework", Confidence: 0.9}}, []string{"comment:42"}},
		{"log text alone never drains", Input{Job: job(0, "n1", "n2"), Diagnosis: gpuDiag(0.9), PartitionSize: 100,
			Evidence: map[string][]store.Evidence{"n1": badGPU("n1", false)}}, []string{"requeue:42", "comment:42"}},
		{"trusted evidence drains and excludes", Input{Job: job(0, "n1", "n2"), Diagnosis: gpuDiag(0.9), PartitionSize: 100,
			Evidence: map[string][]store.Evidence{"n2": badGPU("n2", true)}}, []string{"requeue:42", "comment:42", "drain:n2"}},
		{"slurm down node is not drained again", Input{Job: job(0, "n1", "n2"), Diagnosis: gpuDiag(0.9), PartitionSize: 100,
			Nodes: []NodeState{{Name: "n1", State: "DOWN*"}}}, []string{"requeue:42", "comment:42"}},
		{"low confidence not requeued", Input{Job: job(0, "n1"), Diagnosis: gpuDiag(0.5)}, []string{"comment:42"}},
		{"requeue limit", Input{Job: job(2, "n1"), Diagnosis: gpuDiag(0.9)}, []string{"comment:42"}},
		{"drain limit keeps one", Input{Job: job(0, "n1", "n2"), Diagnosis: gpuDiag(0.9), PartitionSize: 5,
			Evidence: map[string][]store.Evidence{"n1": badGPU("n1", true), "n2": badGPU("n2", true)}}, []string{"requeue:42", "comment:42", "drain:n1"}},
		{"drain budget used up", Input{Job: job(0, "n1"), Diagnosis: gpuDiag(0.9), PartitionSize: 10, PartitionDrained: 1,
			Evidence: map[string][]store.Evidence{"n1": badGPU("n1", true)}}, []string{"requeue:42", "comment:42"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Decide(tt.in, policy)
			if got := kinds(p); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %v, want %v (notes %v)", got, tt.want, p.Notes)
			}
			for _, a := range p.Actions {
				if a.Kind != Requeue && !strings.HasPrefix(a.Text, "schedmate: ") {
					t.Errorf("%s text %q lacks the schedmate prefix", a.Kind, a.Text)
				}
			}
		})
	}
}

func TestDecideExcludesSuspect(t *testing.T) {
	in := Input{Job: &store.Job{JobID: "7", Nodes: []string{"a", "b"}}, Diagnosis: gpuDiag(0.9), PartitionSize: 50,
		Evidence: map[string][]store.Evidence{"b": badGPU("b", true)}}
	p := Decide(in, policy)
	if !slices.Equal(p.Actions[0].Exclude, []string{"b"}) {
		t.Fatalf("exclude %v", p.Actions[0].Exclude)
	}
}

// fakeCluster records calls and fails those listed in fail.
type fakeCluster struct {
	calls []string
	fail  map[string]bool
}

func (f *fakeCluster) do(call string) error {
	f.calls = append(f.calls, call)
	if f.fail[call] {
		return errors.New("slurm said no")
	}
	return nil
}

func (f *fakeCluster) RequeueJob(_ context.Context, id string, exclude []string) error {
	return f.do("requeue " + id + " " + strings.Join(exclude, ","))
}
func (f *fakeCluster) SetJobComment(_ context.Context, id, _ string) error {
	return f.do("comment " + id)
}
func (f *fakeCluster) DrainNode(_ context.Context, name, _ string) error {
	return f.do("drain " + name)
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestExecutor(t *testing.T) {
	plan := Plan{Actions: []Action{
		{Kind: Requeue, Target: "42", Exclude: []string{"n2"}},
		{Kind: Comment, Target: "42", Text: "schedmate: gpu: x"},
		{Kind: Drain, Target: "n2", Text: "schedmate: gpu: x"},
	}}
	for _, dry := range []bool{false, true} {
		st := openStore(t)
		job := &store.Job{JobID: "42", Nodes: []string{"n1", "n2"}}
		if err := st.PutJob(job); err != nil {
			t.Fatal(err)
		}
		fc := &fakeCluster{fail: map[string]bool{"drain n2": true}}
		ex := &Executor{Cluster: fc, Store: st, DryRun: dry, Actor: "test"}
		err := ex.Apply(context.Background(), job, gpuDiag(0.9), plan)
		entries, aerr := st.AuditEntries(time.Time{}, 0)
		if aerr != nil || len(entries) != 3 {
			t.Fatalf("dry=%v: %d audit entries, %v", dry, len(entries), aerr)
		}
		got, _ := st.GetJob("42")
		if dry {
			if err != nil || len(fc.calls) != 0 || got.RequeueCount != 0 || got.Diagnosis != nil {
				t.Fatalf("dry run acted: err %v calls %v job %+v", err, fc.calls, got)
			}
			for _, e := range entries {
				if !e.DryRun || e.Result != "dry-run" {
					t.Errorf("entry %+v", e)
				}
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "drain n2") {
			t.Fatalf("err = %v, want the drain failure", err)
		}
		if !slices.Equal(fc.calls, []string{"requeue 42 n2", "comment 42", "drain n2"}) {
			t.Fatalf("calls %v", fc.calls)
		}
		if got.RequeueCount != 1 || got.Diagnosis == nil || got.Diagnosis.Component != "gpu" {
			t.Fatalf("job %+v", got)
		}
	}
}
