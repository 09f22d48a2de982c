package integration

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// healthNodes are the nodes the health tests drain; other tests keep off
// them, and every drain is undone in cleanup.
var healthNodes = struct{ admin, bad string }{admin: "n7", bad: "n8"}

// healthEnv is a schedmate configuration for the health tests and the
// nodes they may touch.
type healthEnv struct {
	c          *cluster
	dir        string
	standIn    string
	all        []string
	admin, bad string
}

func newHealthEnv(t *testing.T) *healthEnv {
	c := newCluster(t)
	all := unique(strings.Fields(c.exec("", nil, "sinfo", "-h", "-N", "-o", "%N").stdout))
	admin, bad := healthNodes.admin, healthNodes.bad
	if !slices.Contains(all, admin) || !slices.Contains(all, bad) {
		t.Skipf("need nodes %s and %s (NODES=8 contrib/localslurm/up.sh), have %v", admin, bad, all)
	}
	standIn, err := filepath.Abs(filepath.Join("..", "ncclstandin", "all_reduce_perf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{admin, bad} {
			if state, _ := nodeState(c, n); strings.Contains(state, "DRAIN") {
				c.exec("", nil, "scontrol", "update", "NodeName="+n, "State=RESUME")
			}
		}
	})
	return &healthEnv{c: c, dir: t.TempDir(), standIn: standIn, all: all, admin: admin, bad: bad}
}

// config writes a configuration that runs command as nccl-tests on a node
// (the stand-in when empty), with extra health keys, and returns its path.
func (h *healthEnv) config(name, command, timeout, extra string) string {
	h.c.t.Helper()
	path := filepath.Join(h.dir, name+".yaml")
	yaml := fmt.Sprintf(`store:
  path: %s
health:
  nccl_timeout: %s
  nccl_command: %s
  nccl_nodes_command: srun -J TestHealth-nccl --immediate=10 -w {nodes} -N {nnodes} --ntasks-per-node=1 %s
  multi_node_busbw_thresholds: {A100: 200, H100: 400}
%s`, filepath.Join(h.dir, "s.db"), timeout, cmp.Or(command, h.standIn), h.standIn, extra)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		h.c.t.Fatal(err)
	}
	return path
}

// script writes an executable shell script and returns its path.
func (h *healthEnv) script(name, body string) string {
	h.c.t.Helper()
	path := filepath.Join(h.dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		h.c.t.Fatal(err)
	}
	return path
}

// health runs `schedmate health` with cfg. A run that found nodes busy with
// other jobs of the shared cluster (exit 4, "not tested (nodes busy)") is
// retried for up to a minute, so that the result is about the nodes.
func (h *healthEnv) health(cfg string, env []string, args ...string) result {
	h.c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := h.c.exec("", env, h.c.bin, append([]string{"--config", cfg, "health"}, args...)...)
		busy := r.code == 4 && strings.Contains(r.stdout+r.stderr, "nodes busy")
		if !busy || time.Now().After(deadline) {
			return r
		}
		h.c.t.Logf("nodes busy, retrying: %s", strings.TrimSpace(r.stderr))
		time.Sleep(2 * time.Second)
	}
}

func (h *healthEnv) wantDrained(node, reasonPrefix string) {
	h.c.t.Helper()
	h.c.eventually(20*time.Second, func() error {
		state, reason := nodeState(h.c, node)
		if !strings.Contains(state, "DRAIN") || !strings.HasPrefix(reason, reasonPrefix) {
			return fmt.Errorf("%s: state %s reason %q, want drained with %q", node, state, reason, reasonPrefix)
		}
		return nil
	})
}

func (h *healthEnv) wantUndrained(node string) {
	h.c.t.Helper()
	h.c.eventually(20*time.Second, func() error {
		if state, reason := nodeState(h.c, node); strings.Contains(state, "DRAIN") {
			return fmt.Errorf("%s still %s (%q)", node, state, reason)
		}
		return nil
	})
}

// TestHealthNCCLDrainBisectResume runs `schedmate health nccl` across every
// node of the local Slurm with the nccl-tests stand-in, which replays real
// recorded outputs: corrupt whenever the bad node is in the step, below the
// bandwidth floor in slow mode. schedmate must bisect down to the bad node,
// drain only it, skip and leave alone a node an administrator drained, and
// resume its own drain once the node passes again on the node itself.
func TestHealthNCCLDrainBisectResume(t *testing.T) {
	h := newHealthEnv(t)
	cfg := h.config("nccl", "", "1m", "")
	list := strings.Join(h.all, ",")

	r := h.health(cfg, []string{"NCCL_STANDIN_BAD=" + h.bad}, "--json", "nccl", "--nodes", list, "--gpus", "1")
	if r.code != 8 {
		t.Fatalf("health nccl with %s bad: exit %d\n%s\n%s", h.bad, r.code, r.stdout, r.stderr)
	}
	var run struct {
		Bisection struct {
			Bad    []string          `json:"bad"`
			Rounds int               `json:"rounds"`
			Trials []json.RawMessage `json:"trials"`
		} `json:"bisection"`
		Skipped []struct{ Node string } `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
		t.Fatalf("health nccl --json: %v\n%s", err, r.stdout)
	}
	tested := len(h.all) - len(run.Skipped)
	t.Logf("bisection over %d nodes: %d rounds, %d runs, bad %v (skipped %v)", tested, run.Bisection.Rounds, len(run.Bisection.Trials), run.Bisection.Bad, run.Skipped)
	if !slices.Equal(run.Bisection.Bad, []string{h.bad}) {
		t.Errorf("bisection found %v, want [%s]", run.Bisection.Bad, h.bad)
	}
	if tested == 8 && run.Bisection.Rounds > 4 {
		t.Errorf("bisection over 8 nodes took %d rounds, want at most 4", run.Bisection.Rounds)
	}
	h.wantDrained(h.bad, "schedmate: nccl:")
	for _, n := range h.all {
		if _, reason := nodeState(h.c, n); n != h.bad && strings.HasPrefix(reason, "schedmate: nccl:") {
			t.Errorf("healthy node %s drained: %q", n, reason)
		}
	}

	// An administrator drains another node. Slurm runs no step on either
	// drained node, so a cluster-wide run skips both and touches neither.
	if r := h.c.exec("", nil, "scontrol", "update", "NodeName="+h.admin, "State=DRAIN", "Reason=maintenance by ops"); r.code != 0 {
		t.Fatalf("drain %s: %s", h.admin, r.stderr)
	}
	r = h.health(cfg, nil, "nccl", "--nodes", list, "--gpus", "1")
	if r.code != 0 || !strings.Contains(r.stderr, "skipped "+h.admin) || !strings.Contains(r.stderr, "skipped "+h.bad) {
		t.Fatalf("health nccl with drained nodes: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	h.wantDrained(h.bad, "schedmate: nccl:")

	// Retested on the nodes themselves: schedmate's drain is undone once the
	// node passes, the administrator's is left alone.
	for _, n := range []string{h.bad, h.admin} {
		if r := h.health(cfg, []string{"NCCL_STANDIN_NODES=" + n}, "nccl", "--node", n); r.code != 0 {
			t.Fatalf("health nccl on %s after repair: exit %d\n%s\n%s", n, r.code, r.stdout, r.stderr)
		}
	}
	h.wantUndrained(h.bad)
	if state, reason := nodeState(h.c, h.admin); !strings.Contains(state, "DRAIN") || reason != "maintenance by ops" {
		t.Errorf("admin drain undone: %s %q", state, reason)
	}

	// A complete run below the bandwidth floor (an A100 node at 180 GB/s)
	// drains too, and names the bandwidth.
	slow := []string{"NCCL_STANDIN_NODES=" + h.bad, "NCCL_STANDIN_BAD=" + h.bad, "NCCL_STANDIN_MODE=slow"}
	r = h.health(cfg, slow, "nccl", "--node", h.bad)
	if r.code != 8 {
		t.Fatalf("slow run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("slow run:\n%s", r.stdout)
	h.wantDrained(h.bad, "schedmate: nccl:")
	if _, reason := nodeState(h.c, h.bad); !strings.Contains(reason, "busbw") {
		t.Errorf("slow drain reason %q does not name the bandwidth", reason)
	}
	if r := h.health(cfg, []string{"NCCL_STANDIN_NODES=" + h.bad}, "nccl", "--node", h.bad); r.code != 0 {
		t.Fatalf("health nccl after slow: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	h.wantUndrained(h.bad)
}

// TestHealthNCCLCheckErrors runs `schedmate health nccl` on a node with an
// nccl-tests that is missing, hangs, crashes or prints garbage: each is a
// check error that names its cause and drains nothing, unless
// health.drain_on_check_error says so.
func TestHealthNCCLCheckErrors(t *testing.T) {
	h := newHealthEnv(t)
	cases := []struct {
		name, command, want string
	}{
		{"missing", filepath.Join(h.dir, "no-such-all_reduce_perf"), "not found"},
		{"hang", h.script("hang", "echo '# nThread 1 nGpus 1'\nexec sleep 60"), "hang"},
		{"crash", h.script("crash", "head -n 12 "+filepath.Join(filepath.Dir(h.standIn), "recordings", "healthy.txt")+"\nkill -SEGV $$"), "signal"},
		{"garbage", h.script("garbage", "head -c 3000 /dev/urandom"), "unusable output"},
	}
	env := []string{"NCCL_STANDIN_NODES=" + h.bad}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := h.config(tc.name, tc.command, "3s", "")
			r := h.health(cfg, env, "nccl", "--node", h.bad)
			t.Logf("%s: exit %d\n%s%s", tc.name, r.code, r.stdout, r.stderr)
			if r.code != 4 || !strings.Contains(r.stdout, "check_error") || !strings.Contains(strings.ToLower(r.stdout), tc.want) {
				t.Fatalf("want exit 4 and check_error naming %q", tc.want)
			}
			if state, reason := nodeState(h.c, h.bad); strings.Contains(state, "DRAIN") {
				t.Fatalf("%s drained after a check error: %q", h.bad, reason)
			}
		})
	}

	cfg := h.config("drain-on-error", cases[3].command, "3s", "  drain_on_check_error: true\n")
	r := h.health(cfg, env, "nccl", "--node", h.bad)
	if r.code != 4 {
		t.Fatalf("drain_on_check_error: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	h.wantDrained(h.bad, "schedmate: nccl: check error:")
}

// nodeState returns a node's state and reason from scontrol.
func nodeState(c *cluster, node string) (string, string) {
	out := c.exec("", nil, "scontrol", "show", "node", node, "-o").stdout
	var state, reason string
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "State="); ok {
			state = v
		}
	}
	if i := strings.Index(out, "Reason="); i >= 0 {
		reason = out[i+len("Reason="):]
		if j := strings.Index(reason, " ["); j >= 0 {
			reason = reason[:j]
		}
		reason = strings.TrimSpace(reason)
	}
	return state, reason
}

func unique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// TestHealthCheckSpoolsWithoutDatabase runs `schedmate health check` as a
// job step on a node, as Slurm's HealthCheckProgram would, with no database
// on the node: the evidence goes into the health spool, no database is
// created there, and `health ingest` on the controller applies it. Slurm's
// gres says the node has GPUs but this host has no NVML: the check reports
// "unavailable", exits 0 and drains nothing.
func TestHealthCheckSpoolsWithoutDatabase(t *testing.T) {
	h := newHealthEnv(t)
	db := filepath.Join(h.dir, "controller", "s.db")
	spoolDir := filepath.Join(h.dir, "health-spool")
	cfg := filepath.Join(h.dir, "check.yaml")
	yaml := fmt.Sprintf("store:\n  path: %s\nhealth:\n  gpu_spool_dir: %s\n  xid_wait: 100ms\n", db, spoolDir)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.c.exec("", nil, "srun", "-J", "TestHealthCheckSpools", "-w", h.bad, "-N", "1", "-n", "1", h.c.bin, "--config", cfg, "health", "check", "--dry-run")
	t.Logf("health check on %s: exit %d\n%s%s", h.bad, r.code, r.stdout, r.stderr)
	if r.code != 0 || !strings.HasPrefix(r.stdout, h.bad+": unavailable") {
		t.Fatalf("health check on %s: exit %d", h.bad, r.code)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("health check created the database on the node: %v", err)
	}
	spooled, err := os.ReadDir(spoolDir)
	if err != nil || len(spooled) == 0 {
		t.Fatalf("nothing spooled in %s: %v", spoolDir, err)
	}

	r = h.health(cfg, nil, "--json", "ingest")
	var res struct{ Applied, SetAside int }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Applied != len(spooled) || res.SetAside != 0 {
		t.Fatalf("ingest: exit %d %+v, want %d applied\n%s\n%s", r.code, res, len(spooled), r.stdout, r.stderr)
	}
	r = h.health(cfg, nil, "status")
	if r.code != 0 || !strings.Contains(r.stdout, h.bad) || !strings.Contains(r.stdout, "nvml") {
		t.Fatalf("status after ingest: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("status after ingest:\n%s", r.stdout)
	if state, reason := nodeState(h.c, h.bad); strings.Contains(state, "DRAIN") {
		t.Fatalf("%s drained without a driver: %q", h.bad, reason)
	}
}

// TestHealthSampleJobGPUFigures proves the per-job GPU figures path on the
// local Slurm with simulated GPUs (health.simulate_gpus; this host has no
// NVIDIA driver). The shared cluster's slurm.conf cannot be changed, so the
// job runs contrib/node-prolog.sh and contrib/node-epilog.sh itself, on its
// node with its own SLURM_* environment, as slurmd would around it; the
// controller's `hook epilog` then merges the spooled record, and `history
// show` has the mean SM utilisation and peak memory.
func TestHealthSampleJobGPUFigures(t *testing.T) {
	h := newHealthEnv(t)
	contrib, err := filepath.Abs(filepath.Join("..", "..", "contrib"))
	if err != nil {
		t.Fatal(err)
	}
	spoolDir := filepath.Join(h.dir, "gpu-spool")
	runDir := filepath.Join(h.dir, "run")
	env := []string{
		"SCHEDMATE_BIN=" + h.c.bin, "SCHEDMATE_RUN_DIR=" + runDir,
		"SCHEDMATE_STORE_PATH=" + filepath.Join(h.dir, "controller.db"),
		"SCHEDMATE_HEALTH_GPU_SPOOL_DIR=" + spoolDir,
		"SCHEDMATE_HEALTH_SIMULATE_GPUS=dgxh100:4",
		"SCHEDMATE_HEALTH_SAMPLE_INTERVAL=200ms",
		"SCHEDMATE_HOOKS_DRY_RUN=true",
	}
	// The local Slurm's gres has no device files, so slurmd sets no
	// SLURM_JOB_GPUS; the job names the GPUs it holds as slurmd would.
	script := h.script("sample-job.sh", fmt.Sprintf(`export SLURM_JOB_GPUS=1,2
%[1]s/node-prolog.sh
sleep 3
%[1]s/node-epilog.sh
test -e %[2]s/sample.$SLURM_JOB_ID.pid && echo "pid file left behind" >&2 && exit 1
exit 0`, contrib, runDir))
	r := h.c.exec("", env, "sbatch", "--parsable", "-J", "TestHealthSampleJobGPUFigures", "-N", "1", "--gres=gpu:2",
		"-o", filepath.Join(h.dir, "job.out"), script)
	if r.code != 0 {
		t.Fatalf("sbatch: exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.c.exec("", nil, "scancel", id) })
	h.c.waitGone(90*time.Second, id)
	out, _ := os.ReadFile(filepath.Join(h.dir, "job.out"))
	state := strings.TrimSpace(h.c.exec("", nil, "sacct", "-X", "-n", "-P", "-o", "State,NodeList", "-j", id).stdout)
	t.Logf("job %s: %s\n%s", id, state, out)
	if !strings.HasPrefix(state, "COMPLETED|") {
		t.Fatalf("job %s: %s\n%s", id, state, out)
	}
	node := strings.TrimPrefix(state, "COMPLETED|")
	spooled, err := os.ReadDir(spoolDir)
	if err != nil || len(spooled) != 1 {
		t.Fatalf("spool %s holds %d records (%v), want the job's one", spoolDir, len(spooled), err)
	}

	epilogEnv := append(slices.Clone(env), "SLURM_SCRIPT_CONTEXT=epilog_slurmctld", "SLURM_JOB_ID="+id,
		"SLURM_JOB_USER=root", "SLURM_JOB_UID=0", "SLURM_JOB_PARTITION=gpu", "SLURM_JOB_NAME=TestHealthSampleJobGPUFigures",
		"SLURM_JOB_NODELIST="+node, "SLURM_JOB_EXIT_CODE2=0:0", "SLURM_JOB_STATE=COMPLETED")
	if r := h.c.exec("", epilogEnv, h.c.bin, "hook", "epilog"); r.code != 0 {
		t.Fatalf("hook epilog: exit %d: %s", r.code, r.stderr)
	}
	r = h.c.exec("", env, h.c.bin, "--json", "history", "show", id)
	var job struct {
		JobID string `json:"job_id"`
		GPU   *struct {
			MeanSMUtil   float64 `json:"mean_sm_util"`
			PeakMemBytes uint64  `json:"peak_mem_bytes"`
		} `json:"gpu"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &job) != nil || job.GPU == nil {
		t.Fatalf("history show %s: exit %d\n%s\n%s", id, r.code, r.stdout, r.stderr)
	}
	t.Logf("job %s on %s: mean SM util %.1f%%, peak memory %.1f GiB", id, node, job.GPU.MeanSMUtil, float64(job.GPU.PeakMemBytes)/(1<<30))
	// The simulated H100s run at 55-95% SM and 60-80% of 80 GiB.
	if job.GPU.MeanSMUtil < 55 || job.GPU.MeanSMUtil > 95 || job.GPU.PeakMemBytes < 48<<30 || job.GPU.PeakMemBytes > 64<<30 {
		t.Fatalf("gpu figures %+v out of the simulated range", *job.GPU)
	}
	if left, _ := os.ReadDir(spoolDir); len(left) != 0 {
		t.Fatalf("spool not drained: %d records left", len(left))
	}
}

// TestHealthNCCLNodesBusy holds a node with a job: a run across it gives up
// at once (srun --immediate) and reports the nodes "not tested (nodes
// busy)", exit 4, with nothing drained, instead of waiting like a hang.
func TestHealthNCCLNodesBusy(t *testing.T) {
	h := newHealthEnv(t)
	cfg := h.config("busy", "", "1m", "")
	id := h.c.sbatch("-J", "TestHealthNCCLNodesBusy", "-w", h.bad, "--exclusive", "--wrap", "sleep 60")
	t.Cleanup(func() { h.c.exec("", nil, "scancel", id) })
	h.c.waitRunning(60*time.Second, id)
	r := h.c.exec("", []string{"NCCL_STANDIN_BAD=" + h.bad}, h.c.bin, "--config", cfg, "health", "nccl", "--nodes", h.admin+","+h.bad, "--gpus", "1")
	t.Logf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != 4 || !strings.Contains(r.stdout, "not_tested") || !strings.Contains(r.stdout, "nodes busy") {
		t.Fatalf("want exit 4 and not_tested (nodes busy)")
	}
	for _, n := range []string{h.admin, h.bad} {
		if state, reason := nodeState(h.c, n); strings.Contains(state, "DRAIN") {
			t.Fatalf("%s drained while busy: %q", n, reason)
		}
	}
}
