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
  nccl_nodes_command: srun -J TestHealth-nccl -w {nodes} -N {nnodes} --ntasks-per-node=1 %s
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

func (h *healthEnv) health(cfg string, env []string, args ...string) result {
	h.c.t.Helper()
	return h.c.exec("", env, h.c.bin, append([]string{"--config", cfg, "health"}, args...)...)
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
