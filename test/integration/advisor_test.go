package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// estRe reads the estimate from an admin comment ("schedmate: est=4s ...").
var estRe = regexp.MustCompile(`AdminComment=schedmate: est=(\d+)s`)

// TestAdvisorLearnsFromEarlierRuns runs one script three times, then checks
// that a fourth submission of it is estimated from those runs, both in the
// job's admin comment (submit hook) and by `schedmate sbatch`.
func TestAdvisorLearnsFromEarlierRuns(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("TestAdvisorLearns-%d", time.Now().UnixNano())
	script := filepath.Join(dir, "run.sbatch")
	body := "#!/bin/bash\n#SBATCH --job-name=" + name + "\n#SBATCH --time=5\n#SBATCH --output=" + dir + "/%j.out\nsleep 4\necho done\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	var ids []string
	t.Cleanup(func() {
		if len(ids) > 0 {
			c.exec("", nil, "scancel", ids...)
		}
	})
	for range 3 {
		id := c.sbatch("--chdir", dir, script)
		ids = append(ids, id)
		c.waitGone(90*time.Second, id)
	}
	// the end hook indexes each run; wait until the estimate uses them
	var adminComment string
	c.eventually(60*time.Second, func() error {
		id := c.sbatch("--chdir", dir, "--hold", script)
		ids = append(ids, id)
		c.exec("", nil, "scancel", id)
		adminComment = c.exec("", nil, "scontrol", "show", "job", id).stdout
		if !strings.Contains(adminComment, "src=resubmission") && !strings.Contains(adminComment, "src=similar") {
			return fmt.Errorf("job %s not yet estimated from history: %q", id, firstLine(adminComment, "AdminComment="))
		}
		return nil
	})
	m := estRe.FindStringSubmatch(adminComment)
	if m == nil {
		t.Fatalf("no seconds estimate in %q", firstLine(adminComment, "AdminComment="))
	}
	if est, _ := strconv.Atoi(m[1]); est < 2 || est > 16 {
		t.Errorf("estimate %ds, want within 2x of the ~4-8s runs", est)
	}

	r := c.exec("", nil, c.bin, "sbatch", "--parsable", "--hold", "--chdir", dir, script)
	if r.code != 0 {
		t.Fatalf("schedmate sbatch: exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	ids = append(ids, id)
	if _, err := strconv.Atoi(id); err != nil {
		t.Errorf("stdout %q is not sbatch --parsable's job id", r.stdout)
	}
	if !strings.Contains(r.stderr, "schedmate: est=") {
		t.Errorf("stderr lacks the estimate: %q", r.stderr)
	}

	bad := c.exec("", nil, c.bin, "sbatch", "--no-such-option", script)
	if bad.code == 0 {
		t.Errorf("schedmate sbatch with a bad option exited 0")
	}
	if strings.Contains(bad.stderr, "sbatch exited with status") {
		t.Errorf("extra exit-status line on stderr: %q", bad.stderr)
	}
}

// TestSubmitHookBadScripts submits scripts the fingerprint cannot use: the
// submission must go through with an estimate comment all the same.
func TestSubmitHookBadScripts(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/shadow", filepath.Join(dir, "secrets")); err != nil {
		t.Fatal(err)
	}
	// sbatch itself refuses NUL bytes; everything else binary reaches the hook
	binary := filepath.Join(dir, "binary.sbatch")
	if err := os.WriteFile(binary, append([]byte("#!/bin/bash\n#SBATCH --time=1\ntrue\n"), 0x01, 0x02, 0xff, 0xfe, 0xc3, 0x28), 0o755); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "config.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil { // sparse 2 GiB
		t.Fatal(err)
	}
	f.Close()
	cfgScript := filepath.Join(dir, "cfg.sbatch")
	if err := os.WriteFile(cfgScript, []byte("#!/bin/bash\n#SBATCH --time=1\ncat secrets >/dev/null\npython train.py --config config.yaml\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{binary, cfgScript} {
		start := time.Now()
		id := c.sbatch("--hold", "--chdir", dir, "--job-name", "TestSubmitHookBadScripts", s)
		c.exec("", nil, "scancel", id)
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: submission took %v", s, d)
		}
		show := c.exec("", nil, "scontrol", "show", "job", id).stdout
		if !strings.Contains(show, "AdminComment=schedmate: est=") {
			t.Errorf("%s: no estimate comment: %q", s, firstLine(show, "AdminComment="))
		}
		if strings.Contains(show, "root:") {
			t.Errorf("%s: /etc/shadow content leaked into the job record", s)
		}
	}
}

// firstLine returns the line of text that holds key.
func firstLine(text, key string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, key) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
