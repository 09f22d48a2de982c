package history

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/exitcode"
	jobhistory "github.com/schedmate/schedmate/internal/history"
)

// sacctOutput is `sacct --parsable2 --format
// JobID,JobIDRaw,User,State,ExitCode,Start,End,Partition,NodeList,AllocTRES`.
const sacctOutput = `JobID|JobIDRaw|User|State|ExitCode|Start|End|Partition|NodeList|AllocTRES
7001|7001|alice|COMPLETED|0:0|2026-03-01T08:00:00|2026-03-01T09:00:00|gpu|gpu[01-02]|billing=16,cpu=16,gres/gpu=8,node=2
7001.batch|7001.batch||COMPLETED|0:0|2026-03-01T08:00:00|2026-03-01T09:00:00||gpu01|cpu=8,gres/gpu=4,node=1
7002|7002|bob|FAILED|1:0|2026-03-01T08:00:00|2026-03-01T08:10:00|gpu|gpu03|cpu=4,gres/gpu=1,node=1
7010_2|7012|alice|CANCELLED by 1000|0:15|2026-03-01T08:00:00|2026-03-01T08:05:00|gpu|gpu04|cpu=4,node=1
7003|7003|carol|RUNNING|0:0|2026-03-01T08:00:00|Unknown|gpu|gpu05|cpu=4,node=1
`

func TestImportSacct(t *testing.T) {
	h := newHarness(t)
	file := filepath.Join(t.TempDir(), "sacct.txt")
	if err := os.WriteFile(file, []byte(sacctOutput), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := h.run(false, "", "import", "sacct", file)
	if err != nil {
		t.Fatal(err)
	}
	// The job step is dropped by the parser; the running job is skipped.
	if want := "imported 4 rows from " + file + ": 3 new, 0 updated, 0 unchanged, 1 skipped"; !strings.HasPrefix(out, want) {
		t.Errorf("stdout = %q, want it to start with %q", out, want)
	}
	out, _, err = h.run(true, sacctOutput, "import", "sacct", "-")
	if err != nil {
		t.Fatal(err)
	}
	var res jobhistory.ImportResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if res != (jobhistory.ImportResult{Unchanged: 3, Skipped: 1}) {
		t.Errorf("second import = %+v", res)
	}
	out, _, err = h.run(true, "", "list")
	if err != nil || !strings.Contains(out, `"job_id": "7002"`) || strings.Contains(out, "7003") {
		t.Errorf("history after import = %s, %v", out, err)
	}
	out, _, err = h.run(true, "", "show", "7010_2")
	if err != nil {
		t.Fatal(err)
	}
	var task struct {
		State    string            `json:"state"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &task); err != nil || task.State != "CANCELLED" || task.Metadata["job_id_raw"] != "7012" {
		t.Errorf("array task = %s (%v)", out, err)
	}
}

func TestImportSacctErrors(t *testing.T) {
	h := newHarness(t)
	_, _, err := h.run(false, "", "import", "sacct", filepath.Join(t.TempDir(), "missing.txt"))
	if exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("missing file: %v (exit %d)", err, exitcode.Of(err))
	}
	_, _, err = h.run(false, "", "import", "sacct", "a", "b")
	if err == nil {
		t.Error("two files accepted")
	}
}
