package nccltest

import (
	"encoding/csv"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/shareddata"
)

// manifestRow is one line of the shared corpus manifest.tsv.
type manifestRow struct {
	file, collective, gpu, outcome string
	ranks                          int
	avg                            *float64
	max                            float64
	wrongNonzero                   bool
}

// absentFromText lists the manifest facts that the recorded text itself
// does not carry (the manifest took them from the surrounding report); the
// parser must report them as unknown rather than guess.
var absentFromText = map[string]struct{ collective, ranks bool }{
	"015_allreduce_2node_socket_finalize_accept_wrong_type.txt":          {collective: true, ranks: true},
	"017_allreduce_1024rank_h100_rows_then_test_nccl_failure.txt":        {ranks: true},
	"038_sendrecv_2gpu_gtx1080_oldformat_inplace_error_3e02_excerpt.txt": {ranks: true},
}

func readManifest(t *testing.T, dir string) []manifestRow {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "manifest.tsv"))
	if err != nil {
		t.Fatalf("open manifest: %v", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma = '\t'
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	var rows []manifestRow
	var col map[string]int
	for first := true; ; first = false {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read manifest: %v", err)
		}
		if first {
			col = map[string]int{}
			for i, name := range rec {
				col[name] = i
			}
			continue
		}
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return rec[i]
			}
			return ""
		}
		m := manifestRow{file: get("file"), collective: get("collective"), gpu: get("gpu_model"), outcome: get("outcome"), wrongNonzero: get("wrong_nonzero") == "yes"}
		m.ranks, _ = strconv.Atoi(get("n_ranks"))
		if v := get("avg_busbw_gbps"); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: avg %q: %v", m.file, v, err)
			}
			m.avg = &f
		}
		if v := get("max_busbw_gbps"); v != "" {
			m.max, _ = strconv.ParseFloat(v, 64)
		}
		rows = append(rows, m)
	}
	return rows
}

func TestParseManifest(t *testing.T) {
	checkCorpus(t, shareddata.Dir(t, "nccl"), absentFromText)
}

// TestParseHoldout runs the same checks over outputs written from the real
// formats but kept apart from the corpus the parser was developed on.
// Outcome and figures must be right; a collective the text cannot
// distinguish is reported as a miss but does not fail the test.
func TestParseHoldout(t *testing.T) {
	checkCorpus(t, filepath.Join("testdata", "holdout"), nil)
}

func checkCorpus(t *testing.T, dir string, absent map[string]struct{ collective, ranks bool }) {
	rows := readManifest(t, dir)
	if len(rows) == 0 {
		t.Fatal("empty manifest")
	}
	right := 0
	for _, m := range rows {
		ok := t.Run(strings.TrimSuffix(m.file, ".txt"), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, m.file))
			if err != nil {
				t.Fatal(err)
			}
			res, err := ParseBytes(b)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			a := absent[m.file]
			wantColl, wantRanks := m.collective, m.ranks
			if a.collective {
				wantColl = ""
			}
			if a.ranks {
				wantRanks = 0
			}
			if res.Collective != wantColl {
				if absent == nil {
					t.Logf("collective = %q, want %q (not decidable from this text)", res.Collective, wantColl)
				} else {
					t.Errorf("collective = %q, want %q", res.Collective, wantColl)
				}
			}
			if res.Ranks != wantRanks {
				t.Errorf("ranks = %d, want %d", res.Ranks, wantRanks)
			}
			if string(res.Outcome) != m.outcome {
				t.Errorf("outcome = %s, want %s (failures %v)", res.Outcome, m.outcome, res.Failures)
			}
			switch {
			case m.avg == nil && res.AvgBusBW != nil:
				t.Errorf("avg busbw = %v, want none", *res.AvgBusBW)
			case m.avg != nil && (res.AvgBusBW == nil || math.Abs(*res.AvgBusBW-*m.avg) > 1e-9):
				t.Errorf("avg busbw = %v, want %v", res.AvgBusBW, *m.avg)
			}
			if got := res.MaxBusBW(); math.Abs(got-m.max) > 1e-9 {
				t.Errorf("max busbw = %v, want %v", got, m.max)
			}
			if (res.Wrong > 0) != m.wrongNonzero {
				t.Errorf("wrong = %v, want nonzero %v", res.Wrong, m.wrongNonzero)
			}
			if m.gpu != "" && res.GPUModel != "" && !strings.Contains(m.gpu, res.GPUModel) {
				t.Errorf("gpu model = %q, want %q", res.GPUModel, m.gpu)
			}
		})
		if ok {
			right++
		}
	}
	t.Logf("%s: %d/%d files right", dir, right, len(rows))
}

// TestJudgeCorpus checks the verdict on every corpus file: what a health
// check would conclude from it.
func TestJudgeCorpus(t *testing.T) {
	dir := shareddata.Dir(t, "nccl")
	floors := []Threshold{
		{GPU: "GB10", Collective: "all_gather", MultiNode: true, MinBusBW: 20},
		{GPU: "H100", MinBusBW: 440},
		{GPU: "A100", MinBusBW: 215},
	}
	tests := []struct {
		prefix string
		nodes  int
		status Status
		kind   string
	}{
		{"003", 1, StatusFail, "nccl-error"},
		{"005", 2, StatusFail, "corruption"},
		{"007", 2, StatusFail, "corruption"},
		{"009", 1, StatusPass, ""},
		{"011", 2, StatusPass, ""},
		{"013", 2, StatusPass, ""},
		{"015", 2, StatusFail, "nccl-error"},
		{"017", 128, StatusFail, "nccl-error"},
		{"019", 2, StatusCheckError, "misconfigured"},
		{"022", 2, StatusPass, ""},
		{"025", 1, StatusPass, ""},
		{"027", 1, StatusPass, ""},
		{"029", 2, StatusPass, ""},
		{"031", 2, StatusFail, "low-bandwidth"},
		{"033", 1, StatusPass, ""},
		{"038", 1, StatusCheckError, "truncated"},
	}
	for _, tt := range tests {
		files, _ := filepath.Glob(filepath.Join(dir, tt.prefix+"_*.txt"))
		if len(files) != 1 {
			t.Fatalf("%s: %d files", tt.prefix, len(files))
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		res, err := ParseBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		c := Criteria{}
		if th, ok := SelectThreshold(floors, res.GPUModel, nil, res.Collective, tt.nodes); ok {
			c.MinBusBW = th.MinBusBW
		}
		v := Judge(res, c)
		if v.Status != tt.status || v.Kind != tt.kind {
			t.Errorf("%s: verdict %s/%s (%v), want %s/%s", tt.prefix, v.Status, v.Kind, v.Reasons, tt.status, tt.kind)
		}
	}
}
