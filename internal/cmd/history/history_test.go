package history

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/golden"
	jobhistory "github.com/schedmate/schedmate/internal/history"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
)

func TestMain(m *testing.M) {
	time.Local = time.UTC // golden files print local times
	os.Exit(m.Run())
}

type harness struct {
	t      *testing.T
	dbPath string
	env    []string // more environment, such as the llm section
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, dbPath: filepath.Join(t.TempDir(), "schedmate.db")}
}

// run executes `history <args>`; stdin feeds the command's input.
func (h *harness) run(json bool, stdin string, args ...string) (stdout, stderr string, err error) {
	h.t.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(stdin)
	f := factory.New(ios)
	f.Environ = append([]string{"SCHEDMATE_STORE_PATH=" + h.dbPath, "XDG_CONFIG_HOME=" + h.t.TempDir()}, h.env...)
	f.JSON = json
	defer f.Close()
	cmd := NewCmd(f)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func (h *harness) seed(jobs ...*store.Job) {
	h.t.Helper()
	st, err := store.Open(h.dbPath, store.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.Close()
	for _, j := range jobs {
		if err := st.PutJob(j); err != nil {
			h.t.Fatal(err)
		}
	}
}

var base = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

func sampleJobs() []*store.Job {
	loss := 1.873
	return []*store.Job{
		{JobID: "100", User: "alice", Name: "pretrain-llama-7b-with-a-very-long-name", Partition: "gpu", State: "COMPLETED",
			Submit: base.Add(-time.Hour), Start: base, End: base.Add(26 * time.Hour), NodeList: "gpu[01-04]", Source: "epilog"},
		{JobID: "101", User: "bob", Name: "eval", Partition: "gpu", State: "FAILED", ExitCode: 1,
			Start: base.Add(time.Hour), End: base.Add(90 * time.Minute), NodeList: "gpu05", Source: "epilog",
			Vector: []float32{1, 2}},
		{JobID: "102_3", ArrayJobID: "102", ArrayTaskID: "3", User: "alice", Name: "sweep", Partition: "gpu",
			State: "TIMEOUT", Signal: 15, Submit: base, Start: base.Add(2 * time.Hour), End: base.Add(4 * time.Hour),
			TimeLimit: 2 * time.Hour, NodeList: "gpu06", Nodes: []string{"gpu06"}, NumGPUs: 4,
			WorkDir: "/home/alice/sweep", Script: "/home/alice/sweep/run.sh", SubmitLine: "sbatch --array=0-9 run.sh",
			StdOut: "/home/alice/sweep/slurm-102_3.out", FingerprintHash: "9f2c",
			Metadata: map[string]string{"framework": "torch", "job_id_raw": "105"},
			Estimate: &store.EstimateRecord{EstimateS: 5400, Source: "similar", Confidence: 0.82},
			Metrics:  &store.FinalMetrics{StepTimeS: 0.412, Throughput: 3100, ThroughputUnit: "tokens/s", Step: 900, TotalSteps: 2000, Loss: &loss},
			Diagnosis: &store.Diagnosis{Category: "script", Component: "time_limit", Line: 812, Text: "CANCELLED DUE TO TIME LIMIT",
				Confidence: 0.95, Action: "resubmit with --time=04:00:00"},
			Source: "epilog"},
	}
}

func TestListAndShowGolden(t *testing.T) {
	h := newHarness(t)
	h.seed(sampleJobs()...)
	tests := []struct {
		golden string
		json   bool
		args   []string
	}{
		{"list.txt", false, []string{"list"}},
		{"list_alice.txt", false, []string{"list", "--user", "alice"}},
		{"list.json", true, []string{"list", "--state", "failed,timeout", "--limit", "1"}},
		{"show.txt", false, []string{"show", "102_3"}},
		{"show.json", true, []string{"show", "101"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			out, errOut, err := h.run(tt.json, "", tt.args...)
			if err != nil || errOut != "" {
				t.Fatalf("err %v, stderr %q", err, errOut)
			}
			golden.Check(t, filepath.Join("testdata", tt.golden), []byte(out))
		})
	}
}

func TestListFilters(t *testing.T) {
	h := newHarness(t)
	h.seed(sampleJobs()...)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"list"}, "100 102_3 101"},
		{[]string{"list", "--state", "COMPLETED"}, "100"},
		{[]string{"list", "-s", "failed", "-s", "timeout"}, "102_3 101"},
		{[]string{"list", "--user", "carol"}, ""},
		{[]string{"list", "--since", "2026-03-01T12:01"}, "100"},
		{[]string{"list", "--limit", "0", "--since", "100000d"}, "100 102_3 101"},
		{[]string{"list", "-n", "2"}, "100 102_3"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, _, err := h.run(true, "", tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			var jobs []store.Job
			if err := json.Unmarshal([]byte(out), &jobs); err != nil {
				t.Fatalf("output is not one JSON list: %v\n%s", err, out)
			}
			var ids []string
			for _, j := range jobs {
				ids = append(ids, j.JobID)
			}
			if got := strings.Join(ids, " "); got != tt.want {
				t.Errorf("ids = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{"36h", now.Add(-36 * time.Hour), false},
		{"7d", now.AddDate(0, 0, -7), false},
		{"1.5d", now.Add(-36 * time.Hour), false},
		{"2026-03-01", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), false},
		{"2026-03-01T10:00:00Z", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), false},
		{"yesterday", time.Time{}, true},
		{"-5h", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := parseSince(tt.in, now)
		if (err != nil) != tt.bad || !got.Equal(tt.want) {
			t.Errorf("parseSince(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestListErrors(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		args []string
		code exitcode.Code
	}{
		{[]string{"list", "--since", "soon"}, exitcode.Usage},
		{[]string{"list", "--limit", "-1"}, exitcode.Usage},
		{[]string{"show", "999"}, exitcode.NotFound},
	}
	for _, tt := range tests {
		_, _, err := h.run(false, "", tt.args...)
		if got := exitcode.Of(err); got != tt.code {
			t.Errorf("%v: exit code %d (%v), want %d", tt.args, got, err, tt.code)
		}
	}
}

func TestListEmptyHistory(t *testing.T) {
	h := newHarness(t)
	out, _, err := h.run(true, "", "list")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("list --json on no database = %q, %v", out, err)
	}
	if _, err := os.Stat(h.dbPath); !os.IsNotExist(err) {
		t.Error("listing created the database")
	}
	_, errOut, err := h.run(false, "", "list")
	if err != nil || !strings.Contains(errOut, "no recorded jobs") {
		t.Errorf("human list on no database: %q, %v", errOut, err)
	}
}

func TestListCorruptDatabase(t *testing.T) {
	h := newHarness(t)
	garbage := bytes.Repeat([]byte{0xde, 0xad}, 8192)
	if err := os.WriteFile(h.dbPath, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := h.run(false, "", "list")
	if exitcode.Of(err) != exitcode.DataErr || !strings.Contains(err.Error(), h.dbPath) {
		t.Fatalf("list on a corrupt database = %v", err)
	}
	if data, _ := os.ReadFile(h.dbPath); !bytes.Equal(data, garbage) {
		t.Error("corrupt database was modified")
	}
}

func TestListDrainsSpool(t *testing.T) {
	h := newHarness(t)
	h.seed()
	end, err := jobhistory.EndFromEnv(map[string]string{"SLURM_JOB_ID": "555", "SLURM_JOB_USER": "dave", "SLURM_JOB_EXIT_CODE2": "0:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := spool.New(spool.ForStore(h.dbPath)).Write("end", end); err != nil {
		t.Fatal(err)
	}
	out, _, err := h.run(true, "", "list")
	if err != nil || !strings.Contains(out, `"job_id": "555"`) {
		t.Fatalf("list after spooling = %q, %v", out, err)
	}
	if pending, _ := spool.New(spool.ForStore(h.dbPath)).Pending(); len(pending) != 0 {
		t.Errorf("spool not drained: %v", pending)
	}
}

func TestAudit(t *testing.T) {
	h := newHarness(t)
	h.seed()
	st, err := store.Open(h.dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range []store.AuditEntry{
		{Time: base, Actor: "hook epilog", Action: "requeue", Target: "job 101", Reason: "schedmate: gpu: Xid 79", Result: "done"},
		{Time: base.Add(time.Hour), Actor: "health", Action: "drain", Target: "node gpu05", DryRun: true, Details: map[string]string{"busbw": "120"}},
	} {
		if _, err := st.Audit(e); err != nil {
			t.Fatalf("audit %d: %v", i, err)
		}
	}
	st.Close()
	out, _, err := h.run(false, "", "audit", "--since", "2026-03-01T08:30")
	if err != nil || !strings.Contains(out, "drain (dry run)") || strings.Contains(out, "requeue") {
		t.Errorf("audit --since = %q, %v", out, err)
	}
	out, _, err = h.run(true, "", "audit", "--limit", "0")
	var entries []store.AuditEntry
	if err != nil || json.Unmarshal([]byte(out), &entries) != nil || len(entries) != 2 || entries[0].Action != "requeue" {
		t.Errorf("audit --json = %q, %v", out, err)
	}
	if _, _, err := h.run(false, "", "audit", "--limit", "-2"); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("negative limit: %v", err)
	}
}
