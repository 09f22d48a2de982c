package metrics

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/shareddata"
)

// truthRow is one labelled log: its true step time (nil = unknown) and the
// accepted range.
type truthRow struct {
	file     string
	stepTime *float64
	lo, hi   float64
	step     string
	total    string
}

var reAcceptRange = regexp.MustCompile(`(?i)accept(?:able)?[^0-9]{0,12}(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)`)

// readManifest reads a tab-separated manifest with a header naming at least
// file, step_time_s, step, total_steps and notes.
func readManifest(t *testing.T, path string) []truthRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open manifest: %v", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma = '\t'
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		t.Fatalf("read manifest header: %v", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	var rows []truthRow
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read manifest: %v", err)
		}
		field := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		row := truthRow{file: field("file"), step: field("step"), total: field("total_steps")}
		if v := field("step_time_s"); v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: step_time_s %q: %v", row.file, v, err)
			}
			row.stepTime = &x
			row.lo, row.hi = x*0.9, x*1.1
			if m := reAcceptRange.FindStringSubmatch(field("notes")); m != nil {
				lo, _ := strconv.ParseFloat(m[1], 64)
				hi, _ := strconv.ParseFloat(m[2], 64)
				row.lo, row.hi = math.Min(row.lo, lo), math.Max(row.hi, hi)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// scoreCorpus extracts every log of a manifest, prints a table and returns
// the fraction of correct step times.
func scoreCorpus(t *testing.T, dir string) float64 {
	t.Helper()
	rows := readManifest(t, filepath.Join(dir, "manifest.tsv"))
	if len(rows) == 0 {
		t.Fatalf("no rows in %s", dir)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-46s %10s %10s %-11s %8s %8s %s\n", "file", "truth_s", "got_s", "source", "step", "total", "ok")
	ok := 0
	for _, row := range rows {
		rep, err := ExtractFile(filepath.Join(dir, row.file), Options{})
		if err != nil {
			t.Fatalf("%s: %v", row.file, err)
		}
		good := false
		switch {
		case row.stepTime == nil:
			good = rep.StepTimeS == nil
		case rep.StepTimeS != nil:
			good = *rep.StepTimeS >= row.lo && *rep.StepTimeS <= row.hi
		}
		if good {
			ok++
		}
		fmt.Fprintf(&b, "%-46s %10s %10s %-11s %8s %8s %v\n", trimName(row.file), fmtPtr(row.stepTime), fmtPtr(rep.StepTimeS),
			rep.Source, fmtInt(rep.Step)+"/"+row.step, fmtInt(rep.TotalSteps)+"/"+row.total, good)
	}
	rate := float64(ok) / float64(len(rows))
	fmt.Fprintf(&b, "step time correct: %d/%d = %.1f%%\n", ok, len(rows), 100*rate)
	t.Log(b.String())
	return rate
}

func trimName(s string) string {
	if len(s) > 46 {
		return s[:46]
	}
	return s
}

func fmtPtr(v *float64) string {
	if v == nil {
		return "unknown"
	}
	return strconv.FormatFloat(*v, 'g', 4, 64)
}

func fmtInt(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}

func TestAccuracySharedSteptime(t *testing.T) {
	dir := shareddata.Dir(t, "steptime")
	if rate := scoreCorpus(t, dir); rate < 0.95 {
		t.Errorf("step time accuracy %.1f%% on the shared set, want >= 95%%", 100*rate)
	}
}

func TestAccuracyHoldout(t *testing.T) {
	if rate := scoreCorpus(t, filepath.Join("testdata", "holdout")); rate < 0.95 {
		t.Errorf("step time accuracy %.1f%% on the holdout set, want >= 95%%", 100*rate)
	}
}
