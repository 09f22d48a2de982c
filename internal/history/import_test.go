package history

import (
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
)

func TestImport(t *testing.T) {
	st, _ := openStore(t)
	// The epilog already recorded job 10 with its fingerprint.
	if err := st.PutJob(&store.Job{JobID: "10", State: "FAILED", ExitCode: 1, FingerprintHash: "fp", Source: "epilog"}); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1700000000, 0).UTC()
	rows := []slurm.Job{
		{ID: "10", State: "FAILED", ExitCode: 2, User: "alice", Start: start, End: start.Add(time.Hour)},
		{ID: "10.batch", State: "FAILED"},
		{ID: "11", State: "CANCELLED by 1000", User: "bob", Signal: 15},
		{ID: "12", State: "RUNNING"},
		{ID: "20", ArrayJobID: "13", ArrayTaskID: "4", State: "COMPLETED", GPUs: 8},
		{ID: "", State: "COMPLETED"},
	}
	var calls int
	var indexed []string
	index := func(jobs []*store.Job) error {
		for _, j := range jobs {
			indexed = append(indexed, j.JobID+":"+j.Source)
		}
		return nil
	}
	res, err := Import(st, rows, index, func(done, total int) {
		calls++
		if done != total || total != len(rows) {
			t.Errorf("progress(%d, %d)", done, total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (ImportResult{Added: 2, Updated: 1, Skipped: 3}); res != want || calls != 1 {
		t.Fatalf("Import = %+v after %d progress calls, want %+v", res, calls, want)
	}
	// Each job is indexed as stored: job 10 keeps the epilog's facts.
	if got := strings.Join(indexed, " "); got != "10:epilog 11:sacct 13_4:sacct" {
		t.Errorf("indexed %q", got)
	}
	j, err := st.GetJob("10")
	if err != nil {
		t.Fatal(err)
	}
	if j.ExitCode != 1 || j.FingerprintHash != "fp" || j.User != "alice" || j.Source != "epilog" || !j.Start.Equal(start) {
		t.Errorf("known job after import = %+v; want epilog facts kept and gaps filled", j)
	}
	if j, _ := st.GetJob("11"); j == nil || j.State != "CANCELLED" || j.Source != "sacct" {
		t.Errorf("imported job = %+v", j)
	}
	if j, _ := st.GetJob("13_4"); j == nil || j.Metadata["job_id_raw"] != "20" || j.NumGPUs != 8 {
		t.Errorf("imported array task = %+v", j)
	}
	again, err := Import(st, rows, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ImportResult{Unchanged: 3, Skipped: 3}); again != want {
		t.Errorf("second import = %+v, want %+v", again, want)
	}
}
