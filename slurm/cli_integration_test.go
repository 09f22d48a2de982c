package slurm_test

import (
	"os"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/runner"
	"github.com/schedmate/schedmate/slurm"
	"github.com/schedmate/schedmate/slurm/slurmtest"
)

// TestCLIConformance runs the conformance suite against a real Slurm, such
// as the one contrib/localslurm/up.sh starts. Set SCHEDMATE_SLURM_INTEGRATION=1.
func TestCLIConformance(t *testing.T) {
	if os.Getenv("SCHEDMATE_SLURM_INTEGRATION") != "1" {
		t.Skip("set SCHEDMATE_SLURM_INTEGRATION=1 to run against a real Slurm")
	}
	slurmtest.RunConformance(t, func(t *testing.T) slurm.Client {
		return &slurm.CLI{Runner: runner.Exec{}, BinDir: os.Getenv("SCHEDMATE_SLURM_BIN_DIR"), Timeout: 20 * time.Second}
	}, slurmtest.Options{Node: os.Getenv("SCHEDMATE_SLURM_TEST_NODE"), Wait: 60 * time.Second})
}
