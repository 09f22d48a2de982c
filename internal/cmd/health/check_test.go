package health

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/gpu"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/slurm"
	"github.com/schedmate/schedmate/slurm/slurmfake"
)

// TestCheckAgainstFakeSlurm runs `health check` where NVML cannot start
// (this test machine has no NVIDIA driver): a CPU node is "unavailable" and
// left alone, a node that Slurm says has GPUs is drained.
func TestCheckAgainstFakeSlurm(t *testing.T) {
	if gpu.Open().Available() {
		t.Skip("NVML works here; this test needs a machine without it")
	}
	fake := slurmfake.New(
		slurmfake.WithGPUNodes("gpu", 1, 4),
		slurmfake.WithNodes(slurm.Node{Name: "cpu1", State: "IDLE"}),
	)
	tests := []struct {
		node  string
		code  exitcode.Code
		drain bool
	}{
		{"cpu1", exitcode.OK, false},
		{"gpu1", exitcode.CheckFailed, true},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			ios, _, out, errOut := iostreams.Test()
			f := factory.New(ios)
			f.Environ = []string{"SCHEDMATE_STORE_PATH=" + filepath.Join(t.TempDir(), "s.db")}
			f.SlurmOverride = fake
			defer f.Close()
			cmd := NewCmd(f)
			cmd.SetArgs([]string{"check", "--node", tt.node, "--xid-wait", "0"})
			cmd.SetOut(out)
			cmd.SetErr(errOut)
			code := exitcode.Of(cmd.ExecuteContext(context.Background()))
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			n, _ := fake.Node(context.Background(), tt.node)
			drained := strings.Contains(n.State, "DRAIN")
			if drained != tt.drain || (drained && !strings.HasPrefix(n.Reason, "schedmate: nvml: ")) {
				t.Fatalf("node %+v, want drained %v\n%s", n, tt.drain, out)
			}
		})
	}
}
