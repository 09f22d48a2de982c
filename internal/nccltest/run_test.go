package nccltest

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/runner"
	"github.com/schedmate/schedmate/internal/runner/runnertest"
)

func holdout(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "holdout", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// singleNode are single-node all_reduce floors like the configured defaults.
var singleNode = []Threshold{{GPU: "H200", MinBusBW: 431}, {GPU: "H100", MinBusBW: 440}, {GPU: "A100", MinBusBW: 215}}

func TestTesterVerdicts(t *testing.T) {
	local := []string{"all_reduce_perf", "-b", "8M", "-e", "8G", "-f", "2", "-g", "8"}
	tests := []struct {
		name     string
		gpus     int
		nodes    []string
		script   func(s *runnertest.Stub)
		status   Status
		kind     string
		features []string
	}{
		{
			name: "healthy H100 broadcast has no threshold",
			gpus: 8,
			script: func(s *runnertest.Stub) {
				s.Expect(local...).Stdout(holdout(t, "broadcast_8xh100_root0_ok.txt"))
			},
			status: StatusPass,
		},
		{
			name: "missing binary is a check error",
			gpus: 8,
			script: func(s *runnertest.Stub) {
				s.Expect(local...).Err(runner.ErrNotFound)
			},
			status: StatusCheckError, kind: "not-found",
		},
		{
			name: "hang is a check error",
			gpus: 8,
			script: func(s *runnertest.Stub) {
				s.Expect(local...).Hang()
			},
			status: StatusCheckError, kind: "timeout",
		},
		{
			name: "crash without markers is a check error",
			gpus: 8,
			script: func(s *runnertest.Stub) {
				s.Expect(local...).Fail(139, "Segmentation fault (core dumped)")
			},
			status: StatusCheckError, kind: "crashed",
		},
		{
			name: "garbage output is a check error",
			gpus: 8,
			script: func(s *runnertest.Stub) {
				s.Expect(local...).Stdout("hello world\nthis is not nccl-tests\n")
			},
			status: StatusCheckError, kind: "garbage",
		},
		{
			name: "truncated output is a check error",
			gpus: 8,
			script: func(s *runnertest.Stub) {
				s.Expect(local...).Stdout(holdout(t, "allreduce_8xa100_hang_truncated.txt"))
			},
			status: StatusCheckError, kind: "truncated",
		},
		{
			name:  "failure markers with non-zero exit are a failure",
			gpus:  1,
			nodes: []string{"gpu-a01", "gpu-a02", "gpu-a03", "gpu-a04"},
			script: func(s *runnertest.Stub) {
				s.ExpectPrefix("srun", "--immediate=30", "-w", "gpu-a01,gpu-a02,gpu-a03,gpu-a04", "-N", "4").
					Stdout(holdout(t, "allreduce_srun_l_4node_ib_failure.txt")).Fail(3, "")
			},
			status: StatusFail, kind: "nccl-error",
		},
		{
			name:  "nodes held by other jobs are not tested",
			gpus:  1,
			nodes: []string{"gpu-a01", "gpu-a02"},
			script: func(s *runnertest.Stub) {
				s.ExpectPrefix("srun", "--immediate=30").Fail(1, "srun: job 259 queued and waiting for resources\nsrun: error: Unable to allocate resources: Requested nodes are busy\n")
			},
			status: StatusNotTested, kind: "nodes-busy",
		},
		{
			name:  "a pending job ahead is not tested",
			gpus:  1,
			nodes: []string{"gpu-a01", "gpu-a02"},
			script: func(s *runnertest.Stub) {
				s.ExpectPrefix("srun").Fail(1, "srun: error: Unable to allocate resources: Immediate execution impossible, insufficient priority\n")
			},
			status: StatusNotTested, kind: "nodes-busy",
		},
		{
			name:  "waiting for nodes past the timeout is not tested",
			gpus:  1,
			nodes: []string{"gpu-a01", "gpu-a02"},
			script: func(s *runnertest.Stub) {
				s.ExpectPrefix("srun").Fail(-1, "srun: job 260 queued and waiting for resources\n").Err(context.DeadlineExceeded)
			},
			status: StatusNotTested, kind: "nodes-busy",
		},
		{
			name:  "a bad node list is still a check error",
			gpus:  1,
			nodes: []string{"gpu-a01", "gpu-a02"},
			script: func(s *runnertest.Stub) {
				s.ExpectPrefix("srun").Fail(1, "srun: error: Unable to allocate resources: Invalid node name specified\n")
			},
			status: StatusCheckError, kind: "crashed",
		},
		{
			name: "single-rank runs of a multi-GPU launch are misconfigured",
			gpus: 4,
			script: func(s *runnertest.Stub) {
				s.ExpectPrefix("all_reduce_perf").Stdout(holdout(t, "allreduce_nonmpi_build_4nodes_nranks1.txt"))
			},
			status: StatusCheckError, kind: "misconfigured",
		},
		{
			name: "old-format out-of-bounds footer is corruption",
			gpus: 4,
			script: func(s *runnertest.Stub) {
				s.ExpectPrefix("all_reduce_perf").Stdout(holdout(t, "reducescatter_oldformat_oob_failed.txt"))
			},
			status: StatusFail, kind: "corruption",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stub := runnertest.New(t)
			tt.script(stub)
			tr := &Tester{Runner: stub, GPUsPerNode: tt.gpus, Timeout: 20 * time.Millisecond, Thresholds: singleNode, Features: tt.features}
			rep := tr.Test(context.Background(), tt.nodes)
			if rep.Verdict.Status != tt.status || rep.Verdict.Kind != tt.kind {
				t.Fatalf("verdict = %s/%s (%v), want %s/%s", rep.Verdict.Status, rep.Verdict.Kind, rep.Verdict.Reasons, tt.status, tt.kind)
			}
			if len(rep.Verdict.Reasons) == 0 {
				t.Error("verdict has no reason")
			}
		})
	}
}

func TestTesterFailedHostsNameTheCulprit(t *testing.T) {
	stub := runnertest.New(t)
	stub.ExpectPrefix("srun").Stdout(holdout(t, "allreduce_srun_l_4node_ib_failure.txt")).Fail(3, "")
	tr := &Tester{Runner: stub, GPUsPerNode: 1}
	rep := tr.Test(context.Background(), []string{"gpu-a01", "gpu-a02", "gpu-a03", "gpu-a04"})
	if want := []string{"gpu-a03"}; !reflect.DeepEqual(rep.Verdict.FailedHosts, want) {
		t.Fatalf("failed hosts = %v, want %v", rep.Verdict.FailedHosts, want)
	}
}

func TestJudgeBandwidth(t *testing.T) {
	rows := func(busbw ...float64) []Row {
		var out []Row
		size := GiB / 4
		for _, b := range busbw {
			out = append(out, Row{Bytes: size, Type: "float", OutOfPlace: Side{BusBW: b}, InPlace: Side{BusBW: b - 1}})
			size *= 2
		}
		return out
	}
	avg := 1.0
	tests := []struct {
		name   string
		rows   []Row
		crit   Criteria
		status Status
		busbw  float64
	}{
		{"large rows above floor", rows(100, 200, 445, 450, 300), Criteria{MinBusBW: 440}, StatusPass, 450},
		{"footer average ignored", rows(10, 20, 445, 446), Criteria{MinBusBW: 440}, StatusPass, 446},
		{"degraded link", rows(1, 2, 2.8, 2.82), Criteria{MinBusBW: 20}, StatusFail, 2.82},
		{"median resists one spike", rows(0, 0, 100, 101, 460), Criteria{MinBusBW: 440, Statistic: StatMedian}, StatusFail, 101},
		{"small sweep uses the largest sizes", rows(5, 6)[:2], Criteria{MinBusBW: 5.5}, StatusPass, 6},
		{"no threshold passes", rows(1), Criteria{}, StatusPass, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &Result{Rows: tt.rows, AvgBusBW: &avg, Outcome: OutcomeOK, Collective: "all_reduce"}
			v := Judge(res, tt.crit)
			if v.Status != tt.status || v.BusBW != tt.busbw {
				t.Fatalf("judge = %s %.2f (%v), want %s %.2f", v.Status, v.BusBW, v.Reasons, tt.status, tt.busbw)
			}
		})
	}
}

func TestSelectThreshold(t *testing.T) {
	ts := append([]Threshold{{Feature: "ib4x200", MultiNode: true, MinBusBW: 80}}, singleNode...)
	tests := []struct {
		model    string
		features []string
		coll     string
		nodes    int
		want     float64
	}{
		{"NVIDIA H100 80GB HBM3", nil, "all_reduce", 1, 440},
		{"NVIDIA H200", nil, "", 1, 431},
		{"A100-SXM4-40GB", nil, "all_reduce", 1, 215},
		{"NVIDIA H100 80GB HBM3", nil, "all_gather", 1, 0},
		{"NVIDIA H100 80GB HBM3", nil, "all_reduce", 2, 0},
		{"NVIDIA H100 80GB HBM3", []string{"ib4x200"}, "all_reduce", 4, 80},
		{"NVIDIA GeForce RTX 4090", nil, "all_reduce", 1, 0},
	}
	for _, tt := range tests {
		th, _ := SelectThreshold(ts, tt.model, tt.features, tt.coll, tt.nodes)
		if th.MinBusBW != tt.want {
			t.Errorf("%s %v %s %d nodes: floor %v, want %v", tt.model, tt.features, tt.coll, tt.nodes, th.MinBusBW, tt.want)
		}
	}
}

func TestJudgeSingleRank(t *testing.T) {
	res, err := ParseBytes([]byte(holdout(t, "allreduce_nonmpi_build_4nodes_nranks1.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if v := Judge(res, Criteria{}); v.Status != StatusCheckError || v.Kind != "misconfigured" {
		t.Fatalf("no expectation: %+v", v)
	}
	if v := Judge(res, Criteria{ExpectedRanks: 1, MinBusBW: 100}); v.Status != StatusPass {
		t.Fatalf("one GPU expected: %+v", v)
	}
}

func TestTesterLauncherFailuresAreCheckErrors(t *testing.T) {
	tests := []struct {
		name, stdout, stderr string
		kind                 string
	}{
		{"binary missing on one node", "", "slurmstepd: error: execve(): all_reduce_perf: No such file or directory\nsrun: error: gpu-a03: task 2: Exited with exit code 2\n", "not-found"},
		{"srun abort only", "", "srun: error: gpu-a03: task 2: Segmentation fault (core dumped)\n", "crashed"},
		{"allocation refused", "", "srun: error: Unable to allocate resources: Invalid node name specified\n", "crashed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stub := runnertest.New(t)
			stub.ExpectPrefix("srun").Stdout(tt.stdout).Fail(1, tt.stderr)
			rep := (&Tester{Runner: stub}).Test(context.Background(), []string{"gpu-a01", "gpu-a03"})
			if rep.Verdict.Status != StatusCheckError || rep.Verdict.Kind != tt.kind {
				t.Fatalf("verdict %+v, want check_error/%s", rep.Verdict, tt.kind)
			}
		})
	}
}
