package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// historyJob is the part of a recorded job the history tests check.
type historyJob struct {
	JobID       string `json:"job_id"`
	ArrayJobID  string `json:"array_job_id"`
	ArrayTaskID string `json:"array_task_id"`
	Name        string `json:"name"`
	State       string `json:"state"`
	// FingerprintHash identifies the workload seen at submission.
	FingerprintHash string    `json:"fingerprint_hash"`
	ExitCode        int       `json:"exit_code"`
	Start           time.Time `json:"start"`
	End             time.Time `json:"end"`
	NumGPUs         int       `json:"num_gpus"`
	StdOut          string    `json:"stdout"`
	StdErr          string    `json:"stderr"`
	Source          string    `json:"source"`
}

// recorded returns the jobs in `history list` that ended in the last hour, by id.
//
// While a burst of epilogs holds the database, `history list` may answer
// "locked" (exit 5) after its lock timeout; like a user, it asks again.
func recorded(c *cluster) map[string]historyJob {
	c.t.Helper()
	var jobs []historyJob
	args := []string{"--json", "history", "list", "--limit", "0", "--since", "1h"}
	r := c.schedmate(args...)
	for try := 0; r.code == 5 && try < 20; try++ {
		time.Sleep(500 * time.Millisecond)
		r = c.schedmate(args...)
	}
	if r.code != 0 {
		c.t.Fatalf("schedmate %v: exit %d: %s", args, r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &jobs); err != nil {
		c.t.Fatalf("history list: stdout is not JSON: %v\n%s", err, r.stdout)
	}
	byID := make(map[string]historyJob, len(jobs))
	for _, j := range jobs {
		byID[j.JobID] = j
	}
	return byID
}

// expectation is how one submitted job must appear in the history.
type expectation struct {
	id       string
	state    string
	exitCode int
	// runS is how long the job ran; negative skips the check.
	runS float64
	gpus int
	// logs are the output files Slurm wrote, as the -o pattern expands.
	logs []string
}

func (e expectation) check(j historyJob, ok bool) error {
	switch {
	case !ok:
		return fmt.Errorf("job %s not in history", e.id)
	case j.State != e.state || j.ExitCode != e.exitCode:
		return fmt.Errorf("job %s: state %s exit %d, want %s exit %d", e.id, j.State, j.ExitCode, e.state, e.exitCode)
	case e.gpus > 0 && j.NumGPUs != e.gpus:
		return fmt.Errorf("job %s: %d GPUs, want %d", e.id, j.NumGPUs, e.gpus)
	}
	if e.runS >= 0 {
		// Slurm keeps whole seconds; the batch step adds up to a second or two.
		got := j.End.Sub(j.Start).Seconds()
		if got < e.runS-1 || got > e.runS+3 {
			return fmt.Errorf("job %s ran %.0fs (%s .. %s), want about %.0fs", e.id, got, j.Start, j.End, e.runS)
		}
	}
	for _, want := range e.logs {
		if j.StdOut != want && j.StdErr != want {
			return fmt.Errorf("job %s: log paths %q, %q; want %q", e.id, j.StdOut, j.StdErr, want)
		}
		if _, err := os.Stat(want); err != nil {
			return fmt.Errorf("job %s: recorded log: %w", e.id, err)
		}
	}
	return nil
}

// TestHistoryRecordsRealJobs submits jobs that succeed, fail, are cancelled,
// run as an array and ask for GPUs, with every -o pattern Slurm expands, and
// checks each one's history entry.
func TestHistoryRecordsRealJobs(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	name := fmt.Sprintf("TestHistoryRecordsRealJobs-%d", time.Now().UnixNano())
	user := strings.TrimSpace(c.exec("", nil, "id", "-un").stdout)
	sb := func(suffix, out string, args ...string) string {
		return c.sbatch(append([]string{"-J", name + "-" + suffix, "-D", dir, "-o", filepath.Join(dir, out)}, args...)...)
	}
	ok := sb("ok", "%x-%j-%u.out", "--wrap", "sleep 3; echo done")
	failed := sb("fail", "%x-%j.out", "--wrap", "sleep 1; echo boom >&2; exit 3")
	gres := sb("gres", "%x-%N-%j.out", "--gres=gpu:2", "--wrap", "sleep 1")
	array := sb("array", "%x-%A_%a.out", "--array=0-2", "--wrap", "sleep 1")
	cancelled := sb("cancel", "%x-%j.out", "--wrap", "sleep 120")
	var ids = []string{ok, failed, gres, array, cancelled}
	t.Cleanup(func() { c.exec("", nil, "scancel", ids...) })

	c.waitRunning(time.Minute, cancelled)
	time.Sleep(time.Second)
	if r := c.exec("", nil, "scancel", cancelled); r.code != 0 {
		t.Fatalf("scancel %s: %s", cancelled, r.stderr)
	}
	c.waitGone(time.Minute, ids...)

	node := func(id string) string {
		var j struct {
			NodeList string `json:"node_list"`
		}
		c.schedmateJSON(&j, "history", "show", id)
		return j.NodeList
	}
	want := []expectation{
		{id: ok, state: "COMPLETED", runS: 3, logs: []string{filepath.Join(dir, fmt.Sprintf("%s-ok-%s-%s.out", name, ok, user))}},
		{id: failed, state: "FAILED", exitCode: 3, runS: 1, logs: []string{filepath.Join(dir, fmt.Sprintf("%s-fail-%s.out", name, failed))}},
		{id: cancelled, state: "CANCELLED", runS: -1, logs: []string{filepath.Join(dir, fmt.Sprintf("%s-cancel-%s.out", name, cancelled))}},
		{id: gres, state: "COMPLETED", runS: 1, gpus: 2},
	}
	for task := range 3 {
		want = append(want, expectation{
			id: fmt.Sprintf("%s_%d", array, task), state: "COMPLETED", runS: 1,
			logs: []string{filepath.Join(dir, fmt.Sprintf("%s-array-%s_%d.out", name, array, task))},
		})
	}
	c.eventually(30*time.Second, func() error {
		jobs := recorded(c)
		for _, e := range want {
			j, found := jobs[e.id]
			if err := e.check(j, found); err != nil {
				return err
			}
		}
		return nil
	})
	for _, e := range want {
		var j historyJob
		c.schedmateJSON(&j, "history", "show", e.id)
		if err := e.check(j, true); err != nil {
			t.Errorf("history show: %v", err)
		}
	}
	// %N is the node's host name, known only after the job ran: schedmate
	// takes it to be the node name, as on clusters where the two agree;
	// the local cluster's nodes share one host, whose name Slurm used.
	var g historyJob
	c.schedmateJSON(&g, "history", "show", gres)
	if want := filepath.Join(dir, fmt.Sprintf("%s-gres-%s-%s.out", name, node(gres), gres)); g.StdOut != want {
		t.Errorf("gres job's log = %q, want %q", g.StdOut, want)
	}
	host := strings.TrimSpace(c.exec("", nil, "hostname", "-s").stdout)
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%s-gres-%s-%s.out", name, host, gres))); err != nil {
		t.Errorf("gres job's log: %v", err)
	}
	jobs := recorded(c)
	for task := range 3 {
		j := jobs[fmt.Sprintf("%s_%d", array, task)]
		if j.ArrayJobID != array || j.ArrayTaskID != fmt.Sprint(task) {
			t.Errorf("array task %d recorded as %+v", task, j)
		}
	}
}

// burstJobs is how many jobs TestHistoryBurst submits with the hook on.
const burstJobs = 200

// submitDisabled is job_submit.lua's kill switch.
const submitDisabled = "/etc/schedmate/submit.disabled"

// TestHistoryBurst submits a burst of held jobs with job_submit.lua's hook
// on and off and reports the hook's cost on the submission rate (held, so
// that starting jobs does not weigh on either burst). None may be rejected;
// then every hook-on job is released (the local cluster has 256 CPUs, room
// for all of them at once) and every one must be recorded, COMPLETED, with
// the fingerprint of its submission, which all but the first got from the
// submit answer cache.
func TestHistoryBurst(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	name := fmt.Sprintf("TestHistoryBurst-%d", time.Now().UnixNano())
	var ids []string
	var mu sync.Mutex
	t.Cleanup(func() {
		os.Remove(submitDisabled)
		mu.Lock()
		defer mu.Unlock()
		for i := 0; i < len(ids); i += 100 {
			c.exec("", nil, "scancel", ids[i:min(i+100, len(ids))]...)
		}
	})
	// burst submits n held jobs from four parallel sbatch loops and returns
	// their ids and the rate.
	burst := func(tag string, n int) ([]string, float64) {
		const loops = 4
		start := time.Now()
		var wg sync.WaitGroup
		var batch []string
		for l := range loops {
			wg.Go(func() {
				for i := l; i < n; i += loops {
					id := c.sbatch("-H", "-J", name+"-"+tag, "-D", dir, "-o", "/dev/null", "--wrap", "true")
					mu.Lock()
					ids = append(ids, id)
					batch = append(batch, id)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return batch, float64(n) / time.Since(start).Seconds()
	}
	setHook := func(on bool) {
		if on {
			if err := os.Remove(submitDisabled); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			return
		}
		if err := os.MkdirAll(filepath.Dir(submitDisabled), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(submitDisabled, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	setHook(false)
	offIDs, off := burst("off", burstJobs/2)
	setHook(true)
	onIDs, on := burst("on", burstJobs)
	t.Logf("sbatch rate: %.1f jobs/s with the submit hook, %.1f without (ratio %.2f)", on, off, on/off)
	if len(onIDs) != burstJobs {
		t.Fatalf("%d of %d hook-on submissions accepted", len(onIDs), burstJobs)
	}
	c.exec("", nil, "scancel", offIDs...)
	slices.SortFunc(onIDs, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	sample := onIDs // sample[0] was answered by schedmate itself, the rest by the cache
	for i := 0; i < len(sample); i += 50 {
		part := sample[i:min(i+50, len(sample))]
		if r := c.exec("", nil, "scontrol", "release", strings.Join(part, ",")); r.code != 0 {
			t.Fatalf("release %v: %s", part, r.stderr)
		}
	}
	c.eventually(150*time.Second, func() error {
		jobs := recorded(c)
		var missing []string
		for _, id := range sample {
			j, ok := jobs[id]
			if !ok || j.State != "COMPLETED" {
				missing = append(missing, id)
				continue
			}
			if j.FingerprintHash == "" || j.FingerprintHash != jobs[sample[0]].FingerprintHash {
				return fmt.Errorf("job %s recorded with fingerprint %q, want the first submission's %q", id, j.FingerprintHash, jobs[sample[0]].FingerprintHash)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d of %d released burst jobs not recorded as COMPLETED, e.g. %v", len(missing), len(sample), missing[:min(5, len(missing))])
		}
		return nil
	})
}
