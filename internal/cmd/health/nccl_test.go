package health

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/slurm"
	"github.com/schedmate/schedmate/slurm/slurmfake"
)

// TestNCCLCommandAgainstFakeSlurm runs `health nccl` over eight nodes of
// the fake Slurm with the nccl-tests stand-in that replays real recorded
// outputs, corrupt whenever gpu5 is in the node set.
func TestNCCLCommandAgainstFakeSlurm(t *testing.T) {
	standIn, err := filepath.Abs(filepath.Join("..", "..", "..", "test", "ncclstandin", "all_reduce_perf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	yaml := fmt.Sprintf("store:\n  path: %s\nhealth:\n  nccl_nodes_command: env NCCL_STANDIN_NODES={nodes} %s\n", filepath.Join(dir, "s.db"), standIn)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := slurmfake.New(slurmfake.WithGPUNodes("gpu", 8, 4))
	fake.AddNode(slurm.Node{Name: "gpu2", State: "IDLE+DRAIN", Reason: "maintenance -- ops", GPUs: 4})
	nodes := "gpu1,gpu2,gpu3,gpu4,gpu5,gpu6,gpu7,gpu8"

	nccl := func(dryRun bool, extra ...string) (string, exitcode.Code) {
		ios, _, out, errOut := iostreams.Test()
		f := factory.New(ios)
		f.ConfigFile = cfg
		f.SlurmOverride = fake
		defer f.Close()
		args := append([]string{"nccl", "--nodes", nodes}, extra...)
		if dryRun {
			args = append(args, "--dry-run")
		}
		cmd := NewCmd(f)
		cmd.SetArgs(args)
		cmd.SetOut(out)
		cmd.SetErr(errOut)
		err := cmd.ExecuteContext(context.Background())
		return out.String() + errOut.String(), exitcode.Of(err)
	}
	drains := func() []string {
		var out []string
		for _, c := range fake.CallsTo("DrainNode") {
			out = append(out, c.Args[0])
		}
		return out
	}

	t.Setenv("NCCL_STANDIN_BAD", "gpu5")
	out, code := nccl(true)
	if code != exitcode.CheckFailed || len(drains()) != 0 || !strings.Contains(out, "would drain") {
		t.Fatalf("dry run: exit %d, drains %v\n%s", code, drains(), out)
	}
	out, code = nccl(false)
	if code != exitcode.CheckFailed || !reflect.DeepEqual(drains(), []string{"gpu5"}) {
		t.Fatalf("exit %d, drains %v\n%s", code, drains(), out)
	}
	n, _ := fake.Node(context.Background(), "gpu5")
	if !slurm.IsOurs(n.Reason) || !strings.Contains(n.Reason, "nccl") {
		t.Fatalf("gpu5 reason %q", n.Reason)
	}

	// Slurm runs no step on a drained node: it is skipped and stays drained,
	// unless the launcher bypasses Slurm, as this one does.
	t.Setenv("NCCL_STANDIN_BAD", "")
	out, code = nccl(false)
	if code != exitcode.OK || len(fake.CallsTo("ResumeNode")) != 0 || !strings.Contains(out, "skipped gpu5") || !strings.Contains(out, "skipped gpu2") {
		t.Fatalf("drained nodes not skipped: exit %d, resumes %v\n%s", code, fake.CallsTo("ResumeNode"), out)
	}
	out, code = nccl(false, "--include-drained")
	if code != exitcode.OK {
		t.Fatalf("after repair: exit %d\n%s", code, out)
	}
	var resumed []string
	for _, c := range fake.CallsTo("ResumeNode") {
		resumed = append(resumed, c.Args[0])
	}
	if !reflect.DeepEqual(resumed, []string{"gpu5"}) {
		t.Fatalf("resumed %v, want only gpu5\n%s", resumed, out)
	}
	if n, _ := fake.Node(context.Background(), "gpu2"); n.Reason != "maintenance -- ops" {
		t.Fatalf("admin drain changed: %+v", n)
	}
}
