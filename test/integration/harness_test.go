// Package integration holds end-to-end tests that drive the schedmate binary
// against a real local Slurm (contrib/localslurm/up.sh). They run only with
// SCHEDMATE_SLURM_INTEGRATION=1 and SCHEDMATE_BIN pointing at a built binary.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// cluster gives a test the binary and helpers for the local Slurm.
type cluster struct {
	t   *testing.T
	bin string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	if os.Getenv("SCHEDMATE_SLURM_INTEGRATION") != "1" {
		t.Skip("set SCHEDMATE_SLURM_INTEGRATION=1 to run against the local Slurm (contrib/localslurm/up.sh)")
	}
	bin := os.Getenv("SCHEDMATE_BIN")
	if bin == "" {
		t.Fatal("SCHEDMATE_BIN must name the schedmate binary under test")
	}
	return &cluster{t: t, bin: bin}
}

// result is what a finished command printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

func (c *cluster) exec(stdin string, env []string, name string, args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		c.t.Fatalf("run %s %v: %v", name, args, err)
	}
	return result{out.String(), errb.String(), code}
}

// schedmate runs the binary under test.
func (c *cluster) schedmate(args ...string) result {
	c.t.Helper()
	return c.exec("", nil, c.bin, args...)
}

// schedmateJSON runs the binary with --json and decodes stdout into v.
func (c *cluster) schedmateJSON(v any, args ...string) {
	c.t.Helper()
	r := c.schedmate(append([]string{"--json"}, args...)...)
	if r.code != 0 {
		c.t.Fatalf("schedmate %v: exit %d: %s", args, r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		c.t.Fatalf("schedmate %v: stdout is not JSON: %v\n%s", args, err, r.stdout)
	}
}

// sbatch submits a job with the real sbatch and returns its id.
func (c *cluster) sbatch(args ...string) string {
	c.t.Helper()
	r := c.exec("", nil, "sbatch", append([]string{"--parsable"}, args...)...)
	if r.code != 0 {
		c.t.Fatalf("sbatch %v: exit %d: %s", args, r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	if i := strings.IndexByte(id, ';'); i >= 0 {
		id = id[:i]
	}
	return id
}

// waitGone waits until none of the jobs is pending or running.
func (c *cluster) waitGone(timeout time.Duration, ids ...string) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		r := c.exec("", nil, "squeue", "-h", "-o", "%i", "-j", strings.Join(ids, ","))
		if strings.TrimSpace(r.stdout) == "" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.t.Fatalf("jobs %v still queued after %v", ids, timeout)
}

// waitRunning waits until a job is running.
func (c *cluster) waitRunning(timeout time.Duration, id string) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		r := c.exec("", nil, "squeue", "-h", "-o", "%T", "-j", id)
		if strings.TrimSpace(r.stdout) == "RUNNING" {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	c.t.Fatalf("job %s not running after %v", id, timeout)
}

// eventually retries check until it returns nil or the timeout passes.
func (c *cluster) eventually(timeout time.Duration, check func() error) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.t.Fatalf("condition not met after %v: %v", timeout, err)
}
