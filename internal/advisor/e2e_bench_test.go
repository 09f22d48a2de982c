package advisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkHookSubmitE2E measures `schedmate hook submit` as Slurm's submit
// plugin runs it: the real binary, over a history of 100k ended jobs, from
// process start to answer (database open, fingerprint, search, output). It
// reports p50 and p99 latency.
func BenchmarkHookSubmitE2E(b *testing.B) {
	if testing.Short() {
		b.Skip("builds the binary; skipped in -short mode")
	}
	bin := filepath.Join(b.TempDir(), "schedmate")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "../../cmd/schedmate")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build schedmate: %v\n%s", err, out)
	}
	dbPath := benchStore(b, 100_000)
	dir := copyProject(b)
	env := append(os.Environ(), "SCHEDMATE_STORE_PATH="+dbPath, "XDG_CONFIG_HOME="+b.TempDir())
	args := []string{"hook", "submit", "--script-file", filepath.Join(dir, "train.sbatch"),
		"--user", "user0001", "--uid", strconv.Itoa(os.Getuid()), "--workdir", dir,
		"--name", "train", "--partition", "gpu", "--time-limit", "120"}
	var (
		lat  []time.Duration
		last []byte
	)
	for b.Loop() {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatalf("hook submit: %v\n%s", err, out)
		}
		last = out
	}
	b.Logf("answer: %s", last)
	reportPercentiles(b, lat)
}
