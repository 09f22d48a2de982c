package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// holdLockEnv makes the test binary, re-executed as a child, open the store
// named by the variable, print "ready" and hold it until stdin closes.
const (
	holdLockEnv     = "SCHEDMATE_STORE_TEST_HOLD"
	holdReadOnlyEnv = "SCHEDMATE_STORE_TEST_HOLD_READONLY"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(holdLockEnv); path != "" {
		os.Exit(holdLock(path, os.Getenv(holdReadOnlyEnv) != ""))
	}
	os.Exit(m.Run())
}

func holdLock(path string, readOnly bool) int {
	st, err := Open(path, Options{ReadOnly: readOnly, Timeout: time.Second})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	defer st.Close()
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// startHolder re-executes the test binary as a process that holds the lock on
// path until the test ends.
func startHolder(t *testing.T, path string, readOnly bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+path)
	if readOnly {
		cmd.Env = append(cmd.Env, holdReadOnlyEnv+"=1")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("lock holder did not start: %q %v", line, err)
	}
}

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sub", "schedmate.db")
	st, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func TestJobRoundTrip(t *testing.T) {
	st, _ := openTemp(t)
	loss := 1.25
	tests := []struct {
		name string
		job  *Job
	}{
		{"minimal", &Job{JobID: "1"}},
		{"array task", &Job{JobID: "12_3", ArrayJobID: "12", ArrayTaskID: "3", State: "COMPLETED"}},
		{"full", &Job{
			JobID: "77", User: "alice", Account: "ml", Partition: "gpu", Name: "train",
			WorkDir: "/home/alice/run", Command: "python train.py", SubmitLine: "sbatch run.sh",
			Script: "/home/alice/run/run.sh", Fingerprint: "python train.py --lr 3e-4", FingerprintHash: "ab12",
			Vector: []float32{0.5, -1}, Metadata: map[string]string{"framework": "torch"},
			Submit: time.Unix(100, 0).UTC(), Start: time.Unix(200, 0).UTC(), End: time.Unix(900, 0).UTC(),
			TimeLimit: time.Hour, State: "FAILED", ExitCode: 1, Signal: 9,
			NodeList: "gpu[01-02]", Nodes: []string{"gpu01", "gpu02"}, NumNodes: 2, NumCPUs: 32, NumGPUs: 16,
			StdOut: "/o", StdErr: "/e",
			Metrics:      &FinalMetrics{StepTimeS: 0.4, Throughput: 1200, ThroughputUnit: "tokens/s", Step: 10, TotalSteps: 100, Loss: &loss},
			GPU:          &GPUFigures{MeanSMUtil: 88, PeakMemBytes: 1 << 30, Xids: []int{79}},
			Diagnosis:    &Diagnosis{Category: "infrastructure", Component: "gpu", Line: 5, Text: "Xid 79", Confidence: 0.9, Action: "drain"},
			Estimate:     &EstimateRecord{EstimateS: 600, Source: "similar", Confidence: 0.8},
			RequeueCount: 1, Source: "epilog",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := st.PutJob(tt.job); err != nil {
				t.Fatal(err)
			}
			got, err := st.GetJob(tt.job.JobID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.job) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tt.job)
			}
		})
	}
}

func TestPutJobRejectsEmptyID(t *testing.T) {
	st, _ := openTemp(t)
	if err := st.PutJob(&Job{}); err == nil {
		t.Fatal("PutJob with empty id succeeded")
	}
}

func TestGetJobNotFound(t *testing.T) {
	st, _ := openTemp(t)
	_, err := st.GetJob("404")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestUpdateJob(t *testing.T) {
	st, _ := openTemp(t)
	if err := st.UpdateJob("5", func(j *Job) error { j.State = "RUNNING"; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateJob("5", func(j *Job) error {
		if j.State != "RUNNING" {
			t.Errorf("state = %q, want the stored RUNNING", j.State)
		}
		j.State = "COMPLETED"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := st.UpdateJob("5", func(j *Job) error { j.State = "LOST"; return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	j, err := st.GetJob("5")
	if err != nil || j.State != "COMPLETED" {
		t.Fatalf("job = %+v, %v; want COMPLETED kept after aborted update", j, err)
	}
}

func TestUpdateJobs(t *testing.T) {
	st, _ := openTemp(t)
	if err := st.PutJob(&Job{JobID: "1", State: "COMPLETED"}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err := st.UpdateJobs([]string{"1", "2"}, func(j *Job, exists bool) error {
		seen[j.JobID] = exists
		j.Source = "sacct"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !seen["1"] || seen["2"] {
		t.Errorf("exists = %v, want 1 known and 2 new", seen)
	}
	for _, id := range []string{"1", "2"} {
		if j, err := st.GetJob(id); err != nil || j.Source != "sacct" {
			t.Errorf("job %s = %+v, %v", id, j, err)
		}
	}
	if err := st.UpdateJobs([]string{"3", ""}, func(*Job, bool) error { return nil }); err == nil {
		t.Error("empty id accepted")
	}
	if _, err := st.GetJob("3"); !errors.Is(err, ErrNotFound) {
		t.Error("failed batch was partly written")
	}
}

func TestForEachJobBatchesAndSkipsCorrupt(t *testing.T) {
	st, _ := openTemp(t)
	st.db.NoSync = true // many small writes; durability is not under test
	const n = forEachBatch*2 + 7
	for i := range n {
		if err := st.PutJob(&Job{JobID: fmt.Sprintf("%06d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	err := st.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketJobs).Put([]byte("000100"), []byte("{not json"))
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	err = st.ForEachJob(func(j *Job) error {
		seen = append(seen, j.JobID)
		// Writing from the callback must not deadlock.
		return st.PutKV("touched", j.JobID, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != n-1 {
		t.Fatalf("visited %d jobs, want %d", len(seen), n-1)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Fatalf("order broken at %d: %s after %s", i, seen[i], seen[i-1])
		}
	}
	stop := errors.New("stop")
	count := 0
	if err := st.ForEachJob(func(*Job) error { count++; return stop }); !errors.Is(err, stop) || count != 1 {
		t.Fatalf("err = %v after %d calls, want stop after 1", err, count)
	}
}

func TestAudit(t *testing.T) {
	st, _ := openTemp(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		seq, err := st.Audit(AuditEntry{Time: base.Add(time.Duration(i) * time.Hour), Actor: "epilog", Action: "requeue", Target: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		if seq != uint64(i+1) {
			t.Fatalf("seq = %d, want %d", seq, i+1)
		}
	}
	if err := st.FinishAudit(2, "done", errors.New("scontrol failed")); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishAudit(99, "done", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("FinishAudit(99) = %v, want ErrNotFound", err)
	}
	tests := []struct {
		since   time.Time
		limit   int
		targets string
	}{
		{time.Time{}, 0, "0 1 2 3 4"},
		{base.Add(2 * time.Hour), 0, "2 3 4"},
		{time.Time{}, 2, "3 4"},
		{base.Add(10 * time.Hour), 0, ""},
	}
	for _, tt := range tests {
		got, err := st.AuditEntries(tt.since, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var targets []string
		for _, e := range got {
			targets = append(targets, e.Target)
		}
		if s := strings.Join(targets, " "); s != tt.targets {
			t.Errorf("AuditEntries(%v, %d) = %q, want %q", tt.since, tt.limit, s, tt.targets)
		}
	}
	all, _ := st.AuditEntries(time.Time{}, 0)
	if all[1].Result != "done" || all[1].Err != "scontrol failed" {
		t.Errorf("finished entry = %+v", all[1])
	}
}

func TestEvidence(t *testing.T) {
	st, _ := openTemp(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	add := []Evidence{
		{Node: "gpu1", Time: base, Source: "nvml", OK: true},
		{Node: "gpu1", Time: base, Source: "xid", Check: "xid79", Trusted: true},
		{Node: "gpu1", Time: base.Add(time.Hour), Source: "nccl"},
		{Node: "gpu10", Time: base, Source: "nvml"},
		{Node: "gpu", Time: base, Source: "slurm"},
	}
	for _, e := range add {
		if err := st.AddEvidence(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AddEvidence(Evidence{Node: "", Source: "nvml"}); err == nil {
		t.Error("empty node accepted")
	}
	tests := []struct {
		node  string
		since time.Time
		want  int
	}{
		{"gpu1", time.Time{}, 3},
		{"gpu1", base.Add(time.Minute), 1},
		{"gpu10", time.Time{}, 1},
		{"gpu", time.Time{}, 1},
		{"gpu2", time.Time{}, 0},
	}
	for _, tt := range tests {
		got, err := st.NodeEvidence(tt.node, tt.since)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tt.want {
			t.Errorf("NodeEvidence(%s, %v) = %d entries, want %d", tt.node, tt.since, len(got), tt.want)
		}
		for _, e := range got {
			if e.Node != tt.node {
				t.Errorf("NodeEvidence(%s) returned node %s", tt.node, e.Node)
			}
		}
	}
}

func TestKV(t *testing.T) {
	st, _ := openTemp(t)
	if _, ok, err := st.GetKV("vec", "a"); ok || err != nil {
		t.Fatalf("GetKV on empty store = %v, %v", ok, err)
	}
	err := st.BatchKV("vec", func(put func(string, []byte) error) error {
		for _, k := range []string{"a/1", "a/2", "b/1"} {
			if err := put(k, []byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutKV("vec", "a/3", []byte("x")); err != nil {
		t.Fatal(err)
	}
	v, ok, err := st.GetKV("vec", "a/2")
	if err != nil || !ok || string(v) != "a/2" {
		t.Fatalf("GetKV = %q, %v, %v", v, ok, err)
	}
	var keys []string
	if err := st.ScanKV("vec", "a/", func(k string, _ []byte) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys, ","); got != "a/1,a/2,a/3" {
		t.Errorf("ScanKV keys = %s", got)
	}
	if err := st.DeleteKV("vec", "a/1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.GetKV("vec", "a/1"); ok {
		t.Error("deleted key still present")
	}
	failing := errors.New("fail")
	err = st.BatchKV("vec", func(put func(string, []byte) error) error {
		_ = put("c/1", nil)
		return failing
	})
	if !errors.Is(err, failing) {
		t.Fatalf("BatchKV err = %v", err)
	}
	if _, ok, _ := st.GetKV("vec", "c/1"); ok {
		t.Error("failed batch was partly written")
	}
	if err := st.PutKV("", "k", nil); err == nil {
		t.Error("empty bucket name accepted")
	}
}

func TestSchemaMigration(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
	}{
		{"empty file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"v0 database", func(t *testing.T, path string) {
			db, err := bolt.Open(path, 0o644, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err }); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db")
			tt.prepare(t, path)
			st, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			err = st.view(func(tx *bolt.Tx) error {
				v, err := schemaVersion(tx)
				if v != SchemaVersion {
					t.Errorf("schema version = %d, want %d", v, SchemaVersion)
				}
				for _, b := range [][]byte{bucketJobs, bucketAudit, bucketEvidence} {
					if tx.Bucket(b) == nil {
						t.Errorf("bucket %s missing", b)
					}
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	st, path := openTemp(t)
	if err := st.update(func(tx *bolt.Tx) error { return setSchemaVersion(tx, SchemaVersion+1) }); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, ro := range []bool{false, true} {
		_, err := Open(path, Options{ReadOnly: ro})
		if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), path) {
			t.Errorf("Open(readOnly=%v) = %v, want ErrSchemaTooNew naming the path", ro, err)
		}
	}
}

func TestCorruptFileUntouched(t *testing.T) {
	valid := func(t *testing.T) []byte {
		path := filepath.Join(t.TempDir(), "ok.db")
		st, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		st.db.NoSync = true
		for i := range 300 {
			if err := st.PutJob(&Job{JobID: fmt.Sprint(i), Command: strings.Repeat("x", 500)}); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tests := []struct {
		name string
		data func(t *testing.T) []byte
	}{
		{"garbage", func(*testing.T) []byte { return bytes.Repeat([]byte("garbage!"), 4096) }},
		{"short garbage", func(*testing.T) []byte { return []byte("x") }},
		{"binary noise", func(*testing.T) []byte {
			b := make([]byte, 64<<10)
			for i := range b {
				b[i] = byte(i * 7919)
			}
			return b
		}},
		{"truncated", func(t *testing.T) []byte { d := valid(t); return d[:len(d)/2] }},
		{"truncated to one page", func(t *testing.T) []byte { return valid(t)[:4096] }},
		{"meta pages zeroed", func(t *testing.T) []byte {
			d := valid(t)
			clear(d[:8192])
			return d
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "schedmate.db")
			data := tt.data(t)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, ro := range []bool{false, true} {
				st, err := Open(path, Options{ReadOnly: ro, Timeout: time.Second})
				if err == nil {
					st.Close()
					t.Fatalf("Open(readOnly=%v) of a corrupt file succeeded", ro)
				}
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
					t.Errorf("Open(readOnly=%v) = %v, want ErrCorrupt naming the path", ro, err)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, data) {
				t.Error("corrupt file was modified")
			}
		})
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := Open(missing, Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only open of a missing file = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Error("read-only open created the file")
	}
	st, path := openTemp(t)
	if err := st.PutJob(&Job{JobID: "1"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.GetJob("1"); err != nil {
		t.Errorf("GetJob on read-only store: %v", err)
	}
	if err := ro.PutJob(&Job{JobID: "2"}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("PutJob on read-only store = %v, want ErrReadOnly", err)
	}
}

func TestLockAcrossProcesses(t *testing.T) {
	tests := []struct {
		name         string
		holderRO     bool
		openRO       bool
		wantLocked   bool
		wantMaxDelay time.Duration
	}{
		{"writer blocks writer", false, false, true, 0},
		{"writer blocks reader", false, true, true, 0},
		{"reader blocks writer", true, false, true, 0},
		{"readers share", true, true, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, path := openTemp(t)
			st.Close()
			startHolder(t, path, tt.holderRO)
			got, err := Open(path, Options{ReadOnly: tt.openRO, Timeout: 200 * time.Millisecond})
			if tt.wantLocked {
				if !errors.Is(err, ErrLocked) {
					t.Fatalf("Open = %v, want ErrLocked", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open = %v, want success", err)
			}
			got.Close()
		})
	}
}

func TestDefaultPath(t *testing.T) {
	if os.Geteuid() == 0 {
		if got := DefaultPath(); got != "/var/lib/schedmate/schedmate.db" {
			t.Errorf("DefaultPath as root = %s", got)
		}
		return
	}
	t.Setenv("XDG_DATA_HOME", "/data")
	if got := DefaultPath(); got != "/data/schedmate/schedmate.db" {
		t.Errorf("DefaultPath = %s", got)
	}
}

func TestJobDuration(t *testing.T) {
	start := time.Unix(1000, 0)
	tests := []struct {
		start, end time.Time
		want       time.Duration
	}{
		{start, start.Add(time.Minute), time.Minute},
		{time.Time{}, start, 0},
		{start, time.Time{}, 0},
		{start, start.Add(-time.Second), 0},
	}
	for _, tt := range tests {
		j := Job{Start: tt.start, End: tt.end}
		if got := j.Duration(); got != tt.want {
			t.Errorf("Duration(%v, %v) = %v, want %v", tt.start, tt.end, got, tt.want)
		}
	}
}

func TestJobJSONUsesSeconds(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := Job{JobID: "1", TimeLimit: 90 * time.Minute, Start: start, End: start.Add(42 * time.Second)}
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"time_limit_s":5400`, `"duration_s":42`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %s", data, want)
		}
	}
	var back Job
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.TimeLimit != j.TimeLimit || !back.End.Equal(j.End) || back.JobID != "1" {
		t.Errorf("round trip = %+v", back)
	}
}
