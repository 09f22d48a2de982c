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
// (this test machine has no NVIDIA driver) and on simulated GPUs. Without a
// driver every node is "unavailable" and left alone, even one Slurm says has
// GPUs; simulated GPUs pass when Slurm's count matches and fail (and drain)
// when GPUs are missing.
func TestCheckAgainstFakeSlurm(t *testing.T) {
	if gpu.Open().Available() {
		t.Skip("NVML works here; this test needs a machine without it")
	}
	tests := []struct {
		name     string
		node     string
		simulate string
		code     exitcode.Code
		status   string
		drain    bool
	}{
		{"cpu node", "cpu1", "", exitcode.OK, "unavailable", false},
		{"gres gpu:4 without driver", "gpu1", "", exitcode.OK, "unavailable", false},
		{"simulated 4 of 4", "gpu1", "dgxh100:4", exitcode.OK, "pass", false},
		{"simulated 2 of 4", "gpu1", "dgxh100:2", exitcode.CheckFailed, "fail", true},
		{"unknown machine", "gpu1", "laptop", exitcode.DataErr, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := slurmfake.New(
				slurmfake.WithGPUNodes("gpu", 1, 4),
				slurmfake.WithNodes(slurm.Node{Name: "cpu1", State: "IDLE"}),
			)
			ios, _, out, errOut := iostreams.Test()
			f := factory.New(ios)
			f.Environ = []string{"SCHEDMATE_STORE_PATH=" + filepath.Join(t.TempDir(), "s.db"), "SCHEDMATE_HEALTH_SIMULATE_GPUS=" + tt.simulate}
			f.SlurmOverride = fake
			defer f.Close()
			cmd := NewCmd(f)
			cmd.SetArgs([]string{"check", "--node", tt.node, "--xid-wait", "0"})
			cmd.SetOut(out)
			cmd.SetErr(errOut)
			code := exitcode.Of(cmd.ExecuteContext(context.Background()))
			if code != tt.code || (tt.status != "" && !strings.HasPrefix(out.String(), tt.node+": "+tt.status)) {
				t.Fatalf("exit %d, want %d and %q\n%s%s", code, tt.code, tt.status, out, errOut)
			}
			n, _ := fake.Node(context.Background(), tt.node)
			drained := strings.Contains(n.State, "DRAIN")
			if drained != tt.drain || (drained && !strings.HasPrefix(n.Reason, "schedmate: nvml: ")) {
				t.Fatalf("node %+v, want drained %v\n%s", n, tt.drain, out)
			}
		})
	}
}
