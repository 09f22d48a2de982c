package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm/hostlist"
)

// failureEnv runs jobs that fail on purpose. Its jobs keep off the nodes the
// health tests drain, and are cancelled in cleanup.
type failureEnv struct {
	c   *cluster
	dir string
}

func newFailureEnv(t *testing.T) *failureEnv {
	c := newCluster(t)
	dir, err := os.MkdirTemp("", "schedmate-failure-")
	if err != nil {
		t.Fatal(err)
	}
	// world-readable so that the unreadable-log checks can run as nobody
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return &failureEnv{c: c, dir: dir}
}

// submit runs body as a batch job named after the test and returns its id
// and log path. The log is appended to across requeues.
func (e *failureEnv) submit(name, body string) (id, log string) {
	e.c.t.Helper()
	script := filepath.Join(e.dir, name+".sh")
	if err := os.WriteFile(script, []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
		e.c.t.Fatal(err)
	}
	log = filepath.Join(e.dir, name+".out")
	id = e.c.sbatch("-J", e.c.t.Name()+"-"+name, "-o", log, "--open-mode=append", "--requeue",
		"-x", healthNodes.admin+","+healthNodes.bad, "-D", e.dir, script)
	e.c.t.Cleanup(func() { e.c.exec("", nil, "scancel", id) })
	return id, log
}

// jobFields returns `scontrol show job -o` as key=value pairs; values with
// spaces (comments) are cut at the first space, so only simple fields are
// reliable.
func (e *failureEnv) jobFields(id string) map[string]string {
	e.c.t.Helper()
	r := e.c.exec("", nil, "scontrol", "show", "job", "-o", id)
	fields := map[string]string{}
	for _, kv := range strings.Fields(r.stdout) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if _, seen := fields[k]; !seen {
				fields[k] = v
			}
		}
	}
	return fields
}

// jobComment returns the job's Comment as scontrol shows it.
func (e *failureEnv) jobComment(id string) string {
	e.c.t.Helper()
	out := e.c.exec("", nil, "scontrol", "show", "job", id).stdout
	for _, ln := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(ln), "Comment="); ok {
			return v
		}
	}
	return ""
}

// waitRestarts waits until the job is pending again after its n-th requeue.
func (e *failureEnv) waitRestarts(id string, n int) map[string]string {
	e.c.t.Helper()
	var f map[string]string
	e.c.eventually(60*time.Second, func() error {
		f = e.jobFields(id)
		if f["Restarts"] != strconv.Itoa(n) || f["JobState"] != "PENDING" {
			return fmt.Errorf("job %s: state %s, restarts %s; want PENDING after restart %d", id, f["JobState"], f["Restarts"], n)
		}
		return nil
	})
	return f
}

// release lets a requeued job start now instead of after Slurm's requeue
// delay, and waits until its run after restart n has begun. StartTime is
// set only while the job waits for its begin time: setting it again and
// again keeps the scheduler from starting the job.
func (e *failureEnv) release(id string, n int) {
	e.c.t.Helper()
	var nudged time.Time
	e.c.eventually(60*time.Second, func() error {
		f := e.jobFields(id)
		if f["JobState"] != "PENDING" || f["Restarts"] != strconv.Itoa(n) {
			return nil
		}
		if f["Reason"] == "BeginTime" && time.Since(nudged) > 5*time.Second {
			e.c.exec("", nil, "scontrol", "update", "JobId="+id, "StartTime=now")
			nudged = time.Now()
		}
		return fmt.Errorf("job %s still pending (%s)", id, f["Reason"])
	})
}

// ranOn returns the nodes named by the "ran on" lines the job printed, one
// per run.
func ranOn(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, m := range regexp.MustCompile(`(?m)^ran on (\S+)$`).FindAllStringSubmatch(string(b), -1) {
		nodes = append(nodes, m[1])
	}
	return nodes
}

// requeueMax returns the failure.requeue_max the epilog runs with, read from
// the same configuration files.
func (e *failureEnv) requeueMax() int {
	e.c.t.Helper()
	var shown struct{ Config map[string]json.RawMessage }
	e.c.schedmateJSON(&shown, "config", "show")
	for k, v := range shown.Config {
		if !strings.EqualFold(k, "failure") {
			continue
		}
		var sec map[string]any
		if err := json.Unmarshal(v, &sec); err != nil {
			e.c.t.Fatal(err)
		}
		for k, v := range sec {
			if n, ok := v.(float64); ok && strings.EqualFold(strings.ReplaceAll(k, "_", ""), "requeuemax") {
				return int(n)
			}
		}
	}
	e.c.t.Fatal("config show: no failure.requeue_max")
	return 0
}

// auditFor returns the audit entries about job id: from `history audit`
// where the command exists, else from the history database.
func (e *failureEnv) auditFor(id string) []store.AuditEntry {
	e.c.t.Helper()
	var all []store.AuditEntry
	r := e.c.schedmate("--json", "history", "audit")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &all) != nil {
		st, err := store.Open(store.DefaultPath(), store.Options{ReadOnly: true, Timeout: 10 * time.Second})
		if err != nil {
			e.c.t.Fatalf("open history database: %v", err)
		}
		all, err = st.AuditEntries(time.Now().Add(-time.Hour), 0)
		st.Close()
		if err != nil {
			e.c.t.Fatal(err)
		}
	}
	var out []store.AuditEntry
	for _, a := range all {
		if a.Details["job"] == id || a.Target == id {
			out = append(out, a)
		}
	}
	return out
}

func countActions(entries []store.AuditEntry, action string) int {
	n := 0
	for _, a := range entries {
		if a.Action == action && !a.DryRun {
			n++
		}
	}
	return n
}

// ncclNetFailure is real NCCL output of an InfiniBand completion error
// (from a public NCCL issue), as a multi-node job prints it before dying.
const ncclNetFailure = `kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer 10.0.35.1<49189> with error 4, opcode 5327, len 5327, vendor err 81 (Send)
kolyoz2:25146:25854 [0] NCCL INFO transport/net.cc:1137 -> 6
kolyoz2:25146:25854 [0] NCCL INFO proxy.cc:698 -> 6
kolyoz2:25146:25854 [0] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]
kolyoz2:25146:25852 [0] NCCL INFO [Service thread] Connection closed by localRank 0
kolyoz1:27255:27930 [0] NCCL INFO [Service thread] Connection closed by localRank 2`

// TestFailureNetworkRequeue: a job killed by an IB error is requeued away
// from its node until the configured limit, then left failed.
func TestFailureNetworkRequeue(t *testing.T) {
	e := newFailureEnv(t)
	limit := e.requeueMax()
	if limit < 1 || limit > 3 {
		t.Skipf("failure.requeue_max is %d; this test covers limits 1 to 3", limit)
	}
	id, log := e.submit("ib", `echo "ran on $SLURMD_NODENAME"
echo "step 10 | loss 2.31 | 412 ms/step"
sleep 1
cat <<'EOF'
`+ncclNetFailure+`
EOF
exit 1`)
	for n := 1; n <= limit; n++ {
		f := e.waitRestarts(id, n)
		nodes := ranOn(t, log)
		if len(nodes) != n {
			t.Fatalf("after restart %d the log shows %d runs: %v", n, len(nodes), nodes)
		}
		excluded, err := hostlist.Expand(f["ExcNodeList"])
		if err != nil {
			t.Fatalf("ExcNodeList %q: %v", f["ExcNodeList"], err)
		}
		for _, node := range nodes {
			if !slices.Contains(excluded, node) {
				t.Errorf("restart %d: ExcNodeList %v lacks %s, where the job failed", n, excluded, node)
			}
		}
		if c := e.jobComment(id); !strings.HasPrefix(c, "schedmate: network:") {
			t.Errorf("restart %d: comment %q", n, c)
		}
		e.release(id, n)
	}
	// The run after the last allowed requeue fails for good.
	e.c.waitGone(60*time.Second, id)
	if f := e.jobFields(id); f["Restarts"] != strconv.Itoa(limit) {
		t.Errorf("job requeued past the limit: restarts %s, limit %d", f["Restarts"], limit)
	}
	if got := countActions(e.auditFor(id), "requeue"); got != limit {
		t.Errorf("audit shows %d requeues, want %d", got, limit)
	}
	if nodes := ranOn(t, log); len(nodes) != limit+1 {
		t.Errorf("job ran %d times, want %d: %v", len(nodes), limit+1, nodes)
	}
}

// TestFailureScriptTraceback: a job that dies of its own Python bug is not
// requeued and the user sees the cause in sacct and in diagnose.
func TestFailureScriptTraceback(t *testing.T) {
	e := newFailureEnv(t)
	py := filepath.Join(e.dir, "train.py")
	if err := os.WriteFile(py, []byte("import sys\nfor step in range(3):\n    print(f'step {step} | loss 2.0 | 300 ms/step', flush=True)\nbatch = {'input_ids': [1, 2]}\nprint(batch['labels'])\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id, log := e.submit("py", "python3 "+py)
	e.c.waitGone(60*time.Second, id)
	if f := e.jobFields(id); f["Restarts"] != "0" {
		t.Fatalf("a script failure was requeued: restarts %s", f["Restarts"])
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	want := slices.IndexFunc(lines, func(s string) bool { return strings.HasPrefix(s, "KeyError:") }) + 1
	if want == 0 {
		t.Fatalf("python did not print a KeyError:\n%s", b)
	}
	var rep struct {
		Category, Text string
		Line           int
	}
	e.c.schedmateJSON(&rep, "diagnose", id)
	if rep.Category != "script" || rep.Line != want || !strings.Contains(rep.Text, "KeyError: 'labels'") {
		t.Errorf("diagnose: %+v, want script at line %d", rep, want)
	}
	e.c.eventually(30*time.Second, func() error {
		out := e.c.exec("", nil, "sacct", "-n", "-X", "-P", "-j", id, "-o", "comment").stdout
		if !strings.Contains(strings.ToLower(out), "schedmate: script: script at log line "+strconv.Itoa(want)) {
			return fmt.Errorf("sacct comment %q", strings.TrimSpace(out))
		}
		return nil
	})
	if got := countActions(e.auditFor(id), "requeue"); got != 0 {
		t.Errorf("audit shows %d requeues of a script failure", got)
	}
}

// TestFailureFakeXidDrainsNothing: an Xid line printed by the job itself is
// not trusted evidence, so no node is drained because of it.
func TestFailureFakeXidDrainsNothing(t *testing.T) {
	e := newFailureEnv(t)
	id, log := e.submit("xid", `echo "ran on $SLURMD_NODENAME"
echo "NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus."
exit 1`)
	// The epilog has acted once the comment is set (after any requeue).
	e.c.eventually(60*time.Second, func() error {
		if c := e.jobComment(id); !strings.HasPrefix(c, "schedmate: gpu:") {
			return fmt.Errorf("comment %q", c)
		}
		return nil
	})
	nodes := ranOn(t, log)
	if len(nodes) == 0 {
		t.Fatal("job never ran")
	}
	out := e.c.exec("", nil, "sinfo", "-h", "-N", "-o", "%N|%T|%E").stdout
	for _, ln := range strings.Split(strings.TrimSpace(out), "\n") {
		parts := strings.SplitN(ln, "|", 3)
		if len(parts) == 3 && strings.Contains(parts[2], "job "+id+":") {
			t.Errorf("node %s drained for job %s: %s (%s)", parts[0], id, parts[2], parts[1])
		}
	}
	if got := countActions(e.auditFor(id), "drain"); got != 0 {
		t.Errorf("audit shows %d drains for a log-only Xid", got)
	}
}

// badLogs are job bodies whose output is hard to read, with the exit code
// `diagnose JOBID` gives for each.
var badLogs = []struct {
	name string
	body string
	code int
}{
	{"empty", "exit 3", 3},
	{"binary", `printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\003\000>\000'; exit 1`, 6},
	{"truncated", `printf 'step 1 | loss 2.0\nTraceback (most recent call last):\n  File "t.py", line 9, in <module>\nValueError: bad value \342\202'; kill -9 $$`, 0},
	{"directory", `echo "Traceback (most recent call last):"; rm -f "$LOG"; mkdir "$LOG"; exit 1`, 3},
	{"sparse", `truncate -s 10G "$LOG"; printf 'Traceback (most recent call last):\nValueError: late\n' >>"$LOG"; exit 1`, 0},
}

// TestFailureBadLogs: logs that are empty, binary, cut mid-character,
// replaced by a directory or 10 GB sparse go through the real epilog and
// diagnose without a crash; the epilog still records each job.
func TestFailureBadLogs(t *testing.T) {
	e := newFailureEnv(t)
	ids := map[string]string{}
	logs := map[string]string{}
	for _, b := range badLogs {
		log := filepath.Join(e.dir, b.name+".out")
		ids[b.name], logs[b.name] = e.submit(b.name, "LOG="+log+"\n"+b.body)
	}
	var all []string
	for _, id := range ids {
		all = append(all, id)
	}
	e.c.waitGone(90*time.Second, all...)
	for _, b := range badLogs {
		id := ids[b.name]
		t.Run(b.name, func(t *testing.T) {
			c := *e.c
			c.t = t
			if f := e.jobFields(id); f["Restarts"] != "0" {
				t.Errorf("requeued: restarts %s", f["Restarts"])
			}
			c.eventually(30*time.Second, func() error {
				if r := c.schedmate("history", "show", id); r.code != 0 {
					return fmt.Errorf("epilog did not record job %s: %s", id, r.stderr)
				}
				return nil
			})
			r := c.schedmate("diagnose", id)
			checkClean(t, r)
			if r.code != b.code {
				t.Errorf("diagnose %s: exit %d, want %d: %s%s", id, r.code, b.code, r.stdout, r.stderr)
			}
		})
	}
	t.Run("direct epilog", func(t *testing.T) {
		c := *e.c
		c.t = t
		cfg := filepath.Join(e.dir, "epilog.yaml")
		if err := os.WriteFile(cfg, []byte("store:\n  path: "+filepath.Join(e.dir, "direct.db")+"\nhooks:\n  dry_run: true\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		unreadable := filepath.Join(e.dir, "unreadable.log")
		if err := os.WriteFile(unreadable, []byte("Traceback (most recent call last):\nValueError: x\n"), 0o000); err != nil {
			t.Fatal(err)
		}
		for i, p := range []string{logs["binary"], logs["truncated"], logs["directory"], logs["sparse"], unreadable,
			filepath.Join(e.dir, "missing.out"), filepath.Join(e.dir, "empty.out")} {
			env := []string{"SLURM_SCRIPT_CONTEXT=epilog_slurmctld",
				fmt.Sprintf("SLURM_JOB_ID=%d", 67000000+i), "SLURM_JOB_USER=root", "SLURM_JOB_UID=0",
				"SLURM_JOB_PARTITION=gpu", "SLURM_JOB_NAME=" + t.Name(), "SLURM_JOB_NODELIST=n1",
				"SLURM_JOB_EXIT_CODE2=1:0", "SLURM_JOB_STATE=FAILED", "SLURM_JOB_STDOUT=" + p,
				"SLURM_JOB_START_TIME=1700000000", "SLURM_JOB_END_TIME=1700000100"}
			r := c.exec("", env, c.bin, "--config", cfg, "hook", "epilog")
			checkClean(t, r)
			if r.code != 0 {
				t.Errorf("hook epilog with log %s: exit %d: %s", p, r.code, r.stderr)
			}
		}
	})
	t.Run("diagnose --log", func(t *testing.T) {
		c := *e.c
		c.t = t
		for _, tc := range []struct {
			path string
			code int
		}{
			{logs["binary"], 6}, {logs["truncated"], 0}, {logs["directory"], 6}, {logs["sparse"], 0},
			{filepath.Join(e.dir, "missing.out"), 3}, {filepath.Join(e.dir, "empty.out"), 6},
		} {
			r := c.schedmate("diagnose", "--log", tc.path)
			checkClean(t, r)
			if r.code != tc.code {
				t.Errorf("diagnose --log %s: exit %d, want %d: %s", tc.path, r.code, tc.code, r.stderr)
			}
		}
		r := c.schedmate("diagnose", "67999999")
		checkClean(t, r)
		if r.code != 3 || !strings.Contains(r.stderr, "67999999") {
			t.Errorf("diagnose of a job that does not exist: exit %d: %s", r.code, r.stderr)
		}
	})
	t.Run("unreadable as another user", func(t *testing.T) {
		c := *e.c
		c.t = t
		if os.Getuid() != 0 {
			t.Skip("needs root to run as nobody")
		}
		p := filepath.Join(e.dir, "secret.log")
		if err := os.WriteFile(p, []byte("Traceback (most recent call last):\nValueError: x\n"), 0o000); err != nil {
			t.Fatal(err)
		}
		r := c.exec("", nil, "runuser", "-u", "nobody", "--", c.bin, "diagnose", "--log", p)
		checkClean(t, r)
		if r.code != 6 || !strings.Contains(r.stderr, "permission denied") {
			t.Errorf("unreadable log: exit %d: %s", r.code, r.stderr)
		}
	})
}

// checkClean fails on a crash: a Go panic or runtime error on stderr.
func checkClean(t *testing.T, r result) {
	t.Helper()
	for _, bad := range []string{"panic:", "goroutine ", "runtime error"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("crash (%q) in stderr:\n%s", bad, r.stderr)
		}
	}
	if r.code != 0 && !strings.Contains(r.stderr, "schedmate") {
		t.Errorf("exit %d without a clear message: %q", r.code, r.stderr)
	}
}
