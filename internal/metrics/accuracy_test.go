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

// scored is one labelled log with its report and whether its step time is
// within the accepted range.
type scored struct {
	row truthRow
	rep *Report
	ok  bool
}

// scoreCorpus extracts every log of a manifest, prints a table and returns
// the scored rows.
func scoreCorpus(t *testing.T, dir string) []scored {
	t.Helper()
	rows := readManifest(t, filepath.Join(dir, "manifest.tsv"))
	if len(rows) == 0 {
		t.Fatalf("no rows in %s", dir)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-46s %10s %10s %-11s %8s %8s %s\n", "file", "truth_s", "got_s", "source", "step", "total", "ok")
	var res []scored
	good := 0
	for _, row := range rows {
		rep, err := ExtractFile(filepath.Join(dir, row.file), Options{})
		if err != nil {
			t.Fatalf("%s: %v", row.file, err)
		}
		r := scored{row: row, rep: rep, ok: row.accepts(rep.StepTimeS)}
		if r.ok {
			good++
		}
		res = append(res, r)
		fmt.Fprintf(&b, "%-46s %10s %10s %-11s %8s %8s %v\n", trimName(row.file), fmtPtr(row.stepTime), fmtPtr(rep.StepTimeS),
			rep.Source, fmtInt(rep.Step)+"/"+row.step, fmtInt(rep.TotalSteps)+"/"+row.total, r.ok)
	}
	fmt.Fprintf(&b, "step time correct: %d/%d = %.1f%%\n", good, len(rows), 100*correctRate(res))
	t.Log(b.String())
	return res
}

// accepts reports whether a step time (nil = unknown) is the row's truth.
func (row truthRow) accepts(got *float64) bool {
	if row.stepTime == nil || got == nil {
		return row.stepTime == nil && got == nil
	}
	return *got >= row.lo && *got <= row.hi
}

// correctRate is the fraction of rows whose step time is correct.
func correctRate(res []scored) float64 {
	good := 0
	for _, r := range res {
		if r.ok {
			good++
		}
	}
	return float64(good) / float64(len(res))
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
	if rate := correctRate(scoreCorpus(t, dir)); rate < 0.95 {
		t.Errorf("step time accuracy %.1f%% on the shared set, want >= 95%%", 100*rate)
	}
}

func TestAccuracyHoldout(t *testing.T) {
	if rate := correctRate(scoreCorpus(t, filepath.Join("testdata", "holdout"))); rate < 0.95 {
		t.Errorf("step time accuracy %.1f%% on the holdout set, want >= 95%%", 100*rate)
	}
}

// TestAccuracyRealRuns holds every log of real training runs, whose step
// time was measured inside the training process, to its truth: the step
// time within 10%, and the step and total where the manifest gives them.
func TestAccuracyRealRuns(t *testing.T) {
	for _, r := range scoreCorpus(t, filepath.Join("testdata", "realruns")) {
		t.Run(r.row.file, func(t *testing.T) {
			if !r.ok {
				t.Errorf("step time = %s, want %s (%.4g-%.4g)", fmtPtr(r.rep.StepTimeS), fmtPtr(r.row.stepTime), r.row.lo, r.row.hi)
			}
			if got := fmtInt(r.rep.Step); r.row.step != "" && got != r.row.step {
				t.Errorf("step = %s, want %s", got, r.row.step)
			}
			if got := fmtInt(r.rep.TotalSteps); r.row.total != "" && got != r.row.total {
				t.Errorf("total = %s, want %s", got, r.row.total)
			}
		})
	}
}
