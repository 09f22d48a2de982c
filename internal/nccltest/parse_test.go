package nccltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/golden"
)

func TestParseBadInput(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrEmpty},
		{"binary", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00"), ErrBinary},
		{"unrelated text", []byte("Epoch 1/10\nloss: 0.53\n"), ErrNoOutput},
		{"invalid utf-8", []byte("\xff\xfe# garbage \xc3\x28\n"), ErrNoOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseBytes(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestParseBoundsHugeInput(t *testing.T) {
	row := "  1073741824     268435456     float     sum      -1   4511.2  238.02  446.28      0   4520.9  237.50  445.32      0\n"
	var b bytes.Buffer
	b.WriteString(strings.Repeat("x", 3<<20) + "\n")
	for i := 0; i < MaxRows+100; i++ {
		b.WriteString(row)
	}
	res, err := ParseBytes(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != MaxRows || res.RowsDropped != 100 {
		t.Fatalf("rows %d dropped %d, want %d and 100", len(res.Rows), res.RowsDropped, MaxRows)
	}
	if res.Outcome != OutcomeTruncated {
		t.Errorf("outcome = %s, want truncated", res.Outcome)
	}
}

func TestParseBareWarnIsNotFailure(t *testing.T) {
	in := "host:1:2 [0] graph/search.cc:1135 NCCL WARN Could not find a path for pattern 4, falling back to simple order\n" +
		"host:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n" +
		"# Avg bus bandwidth    : 1.5\n"
	res, err := ParseBytes([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeOK || len(res.Warnings) != 1 || res.Ranks != 2 {
		t.Fatalf("outcome %s warnings %d ranks %d; want ok, 1, 2", res.Outcome, len(res.Warnings), res.Ranks)
	}
}

// TestParseGolden pins the full JSON of the holdout outputs.
func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "holdout", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no holdout files: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := ParseBytes(raw)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", name+".json"), append(got, '\n'))
		})
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "holdout", "*.txt"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("[1,0]<stdout>:#  Rank  0 Group  0 Pid 1 on h device  0 [0x1] GPU\n"))
	f.Add([]byte("     8   2   float   sum   -1   1.0   0.00   0.00   1.04858e+06   1.0   0.00   0.00   N/A\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		res, err := ParseBytes(in)
		if err != nil {
			return
		}
		if len(res.Rows) > MaxRows || len(res.Failures) > MaxEvents+1 || len(res.Warnings) > MaxEvents {
			t.Fatalf("unbounded result: %d rows %d failures", len(res.Rows), len(res.Failures))
		}
		switch res.Outcome {
		case OutcomeOK, OutcomeFailed, OutcomeTruncated:
		default:
			t.Fatalf("outcome %q", res.Outcome)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("marshal: %v", err)
		}
		_ = Judge(res, Criteria{ExpectedRanks: 8, MinBusBW: 100})
	})
}

func BenchmarkParse(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "holdout", "allreduce_srun_l_4node_ib_failure.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := ParseBytes(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseWrappedLines(t *testing.T) {
	body := []string{
		"# nThread 1 nGpus 2 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
		"#  Rank  0 Group  0 Pid   1001 on      n1 device  0 [0x18] NVIDIA H100 80GB HBM3",
		"#  Rank  1 Group  0 Pid   1001 on      n1 device  1 [0x2a] NVIDIA H100 80GB HBM3",
		"  1073741824     268435456     float     sum      -1   4511.2  238.02  238.02      0   4520.9  237.50  237.50      0",
		"# Out of bounds values : 0 OK",
		"# Avg bus bandwidth    : 238.02",
	}
	wrappers := map[string]func(string) string{
		"kubectl timestamps": func(l string) string { return "2024-05-01T10:00:00.123456789Z " + l },
		"bracket timestamps": func(l string) string { return "[2024-05-01 10:00:00] " + l },
		"srun -l":            func(l string) string { return "0: " + l },
		"mpirun tag-output":  func(l string) string { return "[1,0]<stdout>:" + l },
		"pdsh":               func(l string) string { return "gpu01: " + l },
		"markdown quote":     func(l string) string { return "> " + l },
		"indented":           func(l string) string { return "    " + l },
		"crlf":               func(l string) string { return l + "\r" },
	}
	for name, wrap := range wrappers {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			for _, l := range body {
				b.WriteString(wrap(l) + "\n")
			}
			res, err := ParseBytes([]byte(b.String()))
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != OutcomeOK || res.Ranks != 2 || len(res.Rows) != 1 || res.MaxBusBW() != 238.02 || res.AvgBusBW == nil {
				t.Fatalf("result %+v", res)
			}
		})
	}
}
