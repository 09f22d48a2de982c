package refine_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/failure"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
	"github.com/schedmate/schedmate/internal/llm/refine"
	"github.com/schedmate/schedmate/internal/llmassist"
	"github.com/schedmate/schedmate/internal/logtext"
	"github.com/schedmate/schedmate/internal/metrics"
	"github.com/schedmate/schedmate/internal/shareddata"
)

// The evaluation replays answers recorded from a real model. To record
// them, point -record-llm at an OpenAI-compatible server:
//
//	go test ./internal/llm/refine -run Eval -record-llm http://gpu01:8000/v1 -record-model Qwen/Qwen2.5-7B-Instruct
var (
	recordURL   = flag.String("record-llm", "", "record evaluation answers from this OpenAI-compatible base URL")
	recordModel = flag.String("record-model", "", "model name to record with")
)

// Recorded evaluation answers, one file per corpus.
const (
	failureRecordings  = "testdata/eval_failures.json"
	stepTimeRecordings = "testdata/eval_steptime.json"
)

// evalWindowBefore and evalWindowAfter size the failure window around the
// located root line, as the failure handler sends it.
const (
	evalWindowBefore = 60
	evalWindowAfter  = 40
)

// evalServer returns a refiner backed by recordings (or by a real server in
// record mode) and whether any recordings exist; requests without one are
// answered 503, so the deterministic answer stands for them.
func evalServer(t *testing.T, recordingsFile string) (*refine.Refiner, *llmtest.Server, bool) {
	t.Helper()
	srv := llmtest.New(t)
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.Model, cfg.MaxRetries, cfg.Timeout = true, srv.URL, llmtest.Model, 0, 5*time.Minute
	have := false
	switch {
	case *recordURL != "":
		srv.RecordFrom(*recordURL, os.Getenv("SCHEDMATE_LLM_API_KEY"))
		cfg.Model = *recordModel
		t.Cleanup(func() {
			if err := llmtest.SaveRecordings(recordingsFile, srv.Recordings()); err != nil {
				t.Error(err)
			}
		})
		have = true
	default:
		recs, err := llmtest.LoadRecordings(recordingsFile)
		if err == nil && len(recs) > 0 {
			srv.Replay(recs)
			have = true
		}
		srv.Respond(func(*openai.ChatCompletionRequest) llmtest.Reply {
			return llmtest.Reply{Status: 503, ErrorMessage: "no recorded answer"}
		})
	}
	c, err := llm.New(cfg, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &refine.Refiner{LLM: c}, srv, have
}

func readManifest(t *testing.T, dir string) []map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "manifest.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma, r.LazyQuotes, r.FieldsPerRecord = '\t', true, -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, row := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			if i < len(row) {
				m[h] = row[i]
			}
		}
		out = append(out, m)
	}
	return out
}

// logLines returns a log's cleaned lines, as numbered in the manifests.
func logLines(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range bytes.Split(raw, []byte("\n")) {
		lines = append(lines, logtext.Clean(l))
	}
	return lines
}

// failureCorpora are the labelled failure logs: the shared set, the
// holdout written in the same formats, and logs of real failing runs.
func failureCorpora(t *testing.T) []string {
	return []string{shareddata.Dir(t, "failures"), "../../failure/testdata/holdout", "../../failure/testdata/realruns"}
}

// TestEvalFailureRefinement compares category and component accuracy of
// the deterministic failure classifier alone and refined by the LLM, both
// when every log is sent (the LLM as the classifier) and when only the
// verdicts the diagnose command finds unsure are (llmassist.UnsureVerdict,
// as schedmate runs).
func TestEvalFailureRefinement(t *testing.T) {
	r, srv, have := evalServer(t, failureRecordings)
	minConf := config.Default().Failure.RequeueMinConfidence
	var n, detCat, llmCat, gatedCat, detComp, llmComp, gatedComp, answered, unsure int
	for _, dir := range failureCorpora(t) {
		for _, row := range readManifest(t, dir) {
			path := filepath.Join(dir, row["file"])
			d, err := failure.DiagnoseFile(path, failure.DefaultOptions())
			if err != nil {
				t.Fatalf("%s: %v", row["file"], err)
			}
			det := refine.Verdict{Category: string(d.Category), Component: d.Component, Line: d.Line}
			lines := logLines(t, path)
			lo, hi := max(0, len(lines)-refine.MaxWindowLines), len(lines)
			if d.Line > 0 {
				lo, hi = max(0, d.Line-1-evalWindowBefore), min(len(lines), d.Line+evalWindowAfter)
			}
			got, note, err := r.RefineFailure(context.Background(), lines[lo:hi], det)
			if err == nil {
				answered++
			}
			gated := det
			if llmassist.UnsureVerdict(d, minConf) {
				unsure++
				gated = got
			}
			n++
			wantCat, wantComp := row["category"], row["component"]
			detCat += btoi(det.Category == wantCat)
			llmCat += btoi(got.Category == wantCat)
			gatedCat += btoi(gated.Category == wantCat)
			detComp += btoi(det.Category == wantCat && det.Component == wantComp)
			llmComp += btoi(got.Category == wantCat && got.Component == wantComp)
			gatedComp += btoi(gated.Category == wantCat && gated.Component == wantComp)
			t.Logf("%-55s want %s/%s det %s/%s (%.2f) llm %s/%s (%s)", row["file"], wantCat, wantComp, det.Category, det.Component, d.Confidence, got.Category, got.Component, note)
		}
	}
	t.Logf("unsure verdicts that schedmate would send to the LLM: %d of %d logs", unsure, n)
	report(t, "failure category", n, detCat, llmCat, gatedCat, answered, have, failureRecordings)
	report(t, "failure category+component", n, detComp, llmComp, gatedComp, answered, have, failureRecordings)
	t.Logf("llm usage: %+v", srv.Usage())
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stepTimeCorpora are the step-time logs: the shared set, the holdout
// written in the same formats, and logs of real training runs.
func stepTimeCorpora(t *testing.T) []string {
	return []string{shareddata.Dir(t, "steptime"), "../../metrics/testdata/holdout", "../../metrics/testdata/realruns"}
}

// TestEvalStepTimeRefinement compares step-time accuracy (within 10%, or
// "unknown" for rows without a truth) of the deterministic extractor alone
// and with the LLM reading the same classified progress lines, both for
// every log and only where no rule found a step time
// (llmassist.UnknownStepTime, as schedmate runs).
func TestEvalStepTimeRefinement(t *testing.T) {
	r, srv, have := evalServer(t, stepTimeRecordings)
	var n, detOK, llmOK, gatedOK, answered, unknown int
	for _, dir := range stepTimeCorpora(t) {
		for _, row := range readManifest(t, dir) {
			rep, err := metrics.ExtractFile(filepath.Join(dir, row["file"]), metrics.Options{})
			if err != nil {
				t.Fatalf("%s: %v", row["file"], err)
			}
			want, known := parseTruth(row["step_time_s"])
			det := rep.StepTimeS
			refined := det
			note := "no progress lines"
			if len(rep.ProgressLines) > 0 {
				v, nt, err := r.ExtractStepTime(context.Background(), rep.ProgressLines)
				note = nt
				if err == nil {
					answered++
					refined = v
				}
			}
			gated := det
			if llmassist.UnknownStepTime(rep) {
				unknown++
				gated = refined
			}
			n++
			detOK += btoi(stepOK(det, want, known))
			llmOK += btoi(stepOK(refined, want, known))
			gatedOK += btoi(stepOK(gated, want, known))
			t.Logf("%-45s want %s det %s llm %s (%s)", row["file"], row["step_time_s"], fmtPtr(det), fmtPtr(refined), note)
		}
	}
	t.Logf("logs with progress but no step time, which schedmate would send to the LLM: %d of %d", unknown, n)
	report(t, "step time", n, detOK, llmOK, gatedOK, answered, have, stepTimeRecordings)
	t.Logf("llm usage: %+v", srv.Usage())
}

func parseTruth(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

func stepOK(got *float64, want float64, known bool) bool {
	if !known {
		return got == nil
	}
	return got != nil && math.Abs(*got-want) <= 0.10*want
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "unknown"
	}
	return strconv.FormatFloat(*p, 'g', 5, 64)
}

func report(t *testing.T, what string, n, det, withLLM, gated, answered int, have bool, recordingsFile string) {
	t.Helper()
	if n == 0 {
		t.Fatalf("%s: empty corpus", what)
	}
	if !have {
		t.Logf("%s accuracy: deterministic %d/%d (%.1f%%); with LLM: not measured, no recorded answers in %s (record with -record-llm)",
			what, det, n, 100*float64(det)/float64(n), recordingsFile)
		return
	}
	pct := func(k int) float64 { return 100 * float64(k) / float64(n) }
	t.Logf("%s accuracy: deterministic %d/%d (%.1f%%), LLM on every log %d/%d (%.1f%%), LLM only where unsure %d/%d (%.1f%%); LLM answered %d",
		what, det, n, pct(det), withLLM, n, pct(withLLM), gated, n, pct(gated), answered)
}
