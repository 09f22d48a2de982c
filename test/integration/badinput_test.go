package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// isolated returns the environment that points the binary at a private
// database, submit cache and Slurm settings, so that bad input given to it
// disturbs no one else on the cluster.
func isolated(t *testing.T, extra ...string) (dir string, env []string) {
	dir = t.TempDir()
	env = append([]string{
		"SCHEDMATE_STORE_PATH=" + filepath.Join(dir, "schedmate.db"),
		"SCHEDMATE_SUBMIT_CACHE=" + filepath.Join(dir, "submit-answers.tsv"),
		"SCHEDMATE_STORE_LOCK_TIMEOUT=300ms",
	}, extra...)
	return dir, env
}

// hookSubmit runs `hook submit` for a made-up submission.
func (c *cluster) hookSubmit(env []string, name string, extra ...string) result {
	c.t.Helper()
	args := append([]string{"hook", "submit", "--uid=0", "--user=root", "--workdir=/tmp", "--name=" + name, "--argv=train.sh"}, extra...)
	return c.exec("", env, c.bin, args...)
}

// hookEpilog runs `hook epilog` with the environment slurmctld gives it.
func (c *cluster) hookEpilog(env []string, id, name string) result {
	c.t.Helper()
	env = append([]string{
		"SLURM_JOB_ID=" + id, "SLURM_JOB_NAME=" + name, "SLURM_JOB_USER=root", "SLURM_JOB_UID=0",
		"SLURM_JOB_EXIT_CODE2=0:0", "SLURM_JOB_WORK_DIR=/tmp", "SLURM_JOB_PARTITION=gpu",
	}, env...)
	return c.exec("", env, c.bin, "hook", "epilog")
}

// wantMessage fails unless r's stderr holds every part.
func wantMessage(t *testing.T, what string, r result, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.stderr, p) {
			t.Errorf("%s: stderr lacks %q:\n%s", what, p, r.stderr)
		}
	}
}

// TestBadInputConfig: a broken configuration is reported with its file,
// key and reason; `config verify` exits 2, the hooks exit 0 and a real
// submission goes through and runs.
func TestBadInputConfig(t *testing.T) {
	c := newCluster(t)
	dir, env := isolated(t)
	cases := []struct {
		name    string
		content string // written to the file; "" for a directory
		parts   []string
	}{
		{"bad value", "advisor:\n  top_k: many\n", []string{"advisor.top_k", "many", "not a valid integer"}},
		{"invalid yaml", "store: [unclosed\n", []string{"not valid YAML"}},
		{"binary", "\x00\xff\xfe\x01garbage", []string{"invalid configuration"}},
		{"unreadable", "", []string{"config file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if tc.content == "" {
				if err := os.Mkdir(path, 0o755); err != nil { // a directory cannot be read as a file
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			r := c.exec("", env, c.bin, "--config", path, "config", "verify")
			if r.code != 2 {
				t.Errorf("config verify: exit %d, want 2\n%s", r.code, r.stderr)
			}
			wantMessage(t, "config verify", r, append([]string{filepath.Base(path)}, tc.parts...)...)
			for _, hook := range []result{
				c.exec("", env, c.bin, "--config", path, "hook", "submit", "--uid=0", "--name=x"),
				c.exec("", append(env, "SLURM_JOB_ID=1"), c.bin, "--config", path, "hook", "epilog"),
			} {
				if hook.code != 0 || hook.stdout != "" {
					t.Errorf("hook: exit %d, stdout %q; want exit 0 and no answer", hook.code, hook.stdout)
				}
				wantMessage(t, "hook", hook, filepath.Base(path))
			}
		})
	}

}

// TestBadInputSubmitCache: a damaged submit answer cache makes
// job_submit.lua take the slow path: the real submission goes through and
// runs, and the hook writes a sound cache again. (The shared cache is
// used: damaging it only costs other submissions one slow answer.)
func TestBadInputSubmitCache(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	cache := "/var/lib/schedmate/submit-answers.tsv"
	if _, err := os.Stat(filepath.Dir(cache)); err != nil {
		t.Skipf("no shared submit cache: %v", err)
	}
	tmp := filepath.Join(filepath.Dir(cache), ".TestBadInputSubmitCache")
	if err := os.WriteFile(tmp, []byte("\x00\xffnot a cache\n\t\t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cache); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("TestBadInputSubmitCache-%d", time.Now().UnixNano())
	id := c.sbatch("-J", name, "-D", dir, "-o", "/dev/null", "--wrap", "true")
	t.Cleanup(func() { c.exec("", nil, "scancel", id) })
	c.waitGone(60*time.Second, id)
	c.eventually(30*time.Second, func() error {
		r := c.exec("", nil, "sacct", "-n", "-X", "-P", "-o", "State", "-j", id)
		if got := strings.TrimSpace(r.stdout); got != "COMPLETED" {
			return fmt.Errorf("job %s ended %q, want COMPLETED", id, got)
		}
		return nil
	})
	data, err := os.ReadFile(cache)
	if err != nil || !bytes.HasPrefix(data, []byte("#schedmate-submit-cache v1 ")) {
		t.Errorf("submit cache not rewritten after the damaged one (err %v): %.80q", err, data)
	}
}

// TestBadInputLockedDatabase: a database held by another process gives a
// clear "locked" message and exit 5; the hooks exit 0 and their records
// land through the spool once the lock is gone.
func TestBadInputLockedDatabase(t *testing.T) {
	c := newCluster(t)
	dir, env := isolated(t)
	db := filepath.Join(dir, "schedmate.db")
	// A first submission creates the database.
	if r := c.hookSubmit(env, "TestBadInputLockedDatabase-create"); r.code != 0 {
		t.Fatalf("hook submit on a new database: exit %d: %s", r.code, r.stderr)
	}
	unlock := func() {}
	{
		f, err := os.OpenFile(db, os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		unlock = func() { f.Close() }
		t.Cleanup(unlock)
	}
	r := c.exec("", env, c.bin, "history", "list")
	if r.code != 5 {
		t.Errorf("history list on a locked database: exit %d, want 5\n%s", r.code, r.stderr)
	}
	wantMessage(t, "history list", r, "locked")

	name := fmt.Sprintf("TestBadInputLockedDatabase-%d", time.Now().UnixNano())
	if r := c.hookSubmit(env, name); r.code != 0 {
		t.Errorf("hook submit: exit %d: %s", r.code, r.stderr)
	}
	if r := c.hookEpilog(env, "4000001", name); r.code != 0 {
		t.Errorf("hook epilog: exit %d: %s", r.code, r.stderr)
	} else {
		wantMessage(t, "hook epilog", r, "spooled")
	}
	spooled, _ := filepath.Glob(filepath.Join(db+".spool", "*.json"))
	if len(spooled) < 2 {
		t.Errorf("spool holds %d records, want the submission and the end", len(spooled))
	}
	unlock()
	var jobs []struct {
		JobID  string `json:"job_id"`
		Name   string `json:"name"`
		Script string `json:"script"`
	}
	c.schedmateJSONEnv(env, &jobs, "history", "list")
	found := false
	for _, j := range jobs {
		if j.JobID == "4000001" {
			found = true
			if j.Name != name || j.Script != "/tmp/train.sh" {
				t.Errorf("spooled job recorded as %+v, want name %s and script /tmp/train.sh", j, name)
			}
		}
	}
	if !found {
		t.Errorf("spooled job 4000001 not in the history: %+v", jobs)
	}
}

// schedmateJSONEnv is schedmateJSON with extra environment.
func (c *cluster) schedmateJSONEnv(env []string, v any, args ...string) {
	c.t.Helper()
	r := c.exec("", env, c.bin, append([]string{"--json"}, args...)...)
	if r.code != 0 {
		c.t.Fatalf("schedmate %v: exit %d: %s", args, r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		c.t.Fatalf("schedmate %v: stdout is not JSON: %v\n%s", args, err, r.stdout)
	}
}

// TestBadInputCorruptDatabase: a damaged database file is reported with
// exit 6 and left untouched; the hooks exit 0.
func TestBadInputCorruptDatabase(t *testing.T) {
	c := newCluster(t)
	dir, env := isolated(t)
	db := filepath.Join(dir, "schedmate.db")
	garbage := bytes.Repeat([]byte("not a bbolt file \x00\xff"), 4096)
	if err := os.WriteFile(db, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.exec("", env, c.bin, "history", "list")
	if r.code != 6 {
		t.Errorf("history list on a corrupt database: exit %d, want 6\n%s", r.code, r.stderr)
	}
	wantMessage(t, "history list", r, db)
	name := fmt.Sprintf("TestBadInputCorruptDatabase-%d", time.Now().UnixNano())
	if r := c.hookSubmit(env, name); r.code != 0 {
		t.Errorf("hook submit: exit %d: %s", r.code, r.stderr)
	}
	if r := c.hookEpilog(env, "4000002", name); r.code != 0 {
		t.Errorf("hook epilog: exit %d: %s", r.code, r.stderr)
	}
	if got, err := os.ReadFile(db); err != nil || !bytes.Equal(got, garbage) {
		t.Errorf("corrupt database file was modified (err %v)", err)
	}
	if spooled, _ := filepath.Glob(filepath.Join(db+".spool", "*.json")); len(spooled) < 2 {
		t.Errorf("spool holds %d records, want the submission and the end", len(spooled))
	}
}

// TestBadInputSlurm: Slurm's commands missing or hanging give a clear
// message and exit 4 within slurm.timeout; the epilog still exits 0 and
// records the job from its environment.
func TestBadInputSlurm(t *testing.T) {
	c := newCluster(t)
	dir, _ := isolated(t)
	hang := filepath.Join(dir, "hang")
	if err := os.Mkdir(hang, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"scontrol", "squeue", "sacct", "sinfo", "sbatch", "scancel"} {
		if err := os.WriteFile(filepath.Join(hang, cmd), []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		binDir string
		reason string
	}{
		{"missing", filepath.Join(dir, "nowhere"), "not found"},
		{"hanging", hang, "timed out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, env := isolated(t, "SCHEDMATE_SLURM_BIN_DIR="+tc.binDir, "SCHEDMATE_SLURM_TIMEOUT=1s")
			start := time.Now()
			r := c.exec("", env, c.bin, "top", "--once")
			if r.code != 4 {
				t.Errorf("top --once: exit %d, want 4 (unavailable)\n%s", r.code, r.stderr)
			}
			wantMessage(t, "top --once", r, "slurm: unavailable", tc.reason)
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("top --once took %v with slurm.timeout 1s", took)
			}
			name := fmt.Sprintf("TestBadInputSlurm-%s-%d", tc.name, time.Now().UnixNano())
			if r := c.hookSubmit(env, name); r.code != 0 {
				t.Errorf("hook submit: exit %d: %s", r.code, r.stderr)
			}
			if r := c.hookEpilog(env, "4000003", name); r.code != 0 {
				t.Errorf("hook epilog: exit %d: %s", r.code, r.stderr)
			}
			var job struct {
				JobID string `json:"job_id"`
				State string `json:"state"`
			}
			c.schedmateJSONEnv(env, &job, "history", "show", "4000003")
			if job.State != "COMPLETED" {
				t.Errorf("job recorded as %+v, want COMPLETED from the environment", job)
			}
		})
	}
}
