package llmassist

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/failure"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
	"github.com/schedmate/schedmate/internal/metrics"
)

func newClient(t *testing.T, srv *llmtest.Server) *llm.Client {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.Model, cfg.MaxRetries, cfg.Timeout = true, srv.URL, llmtest.Model, 0, 300*time.Millisecond
	c, err := llm.New(cfg, llm.Options{Cache: llm.NewMemoryCache()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// unsureLog ends in a failure the signatures cannot name (category other).
const unsureLog = "step 1 | loss 2.1 | 400 ms/step\nstep 2 | loss 2.0 | 400 ms/step\nERROR: worker 3 exited unexpectedly\nsrun: error: n1: task 0: Exited with exit code 1\n"

// The failure cases: a good answer replaces the verdict; down, slow and
// garbage answers leave it with a note.
var llmCases = []struct {
	name    string
	reply   llmtest.Reply
	changed bool
	noteHas string
}{
	{"good answer", llmtest.Reply{}, true, ""},
	{"down", llmtest.Reply{Status: 503, ErrorMessage: "overloaded"}, false, "deterministic answer stands: llm unavailable"},
	{"slow", llmtest.Reply{Delay: 3 * time.Second, Content: "{}"}, false, "deterministic answer stands: llm timeout"},
	{"garbage", llmtest.Reply{RawBody: "<html>502 Bad Gateway</html>"}, false, "deterministic answer stands"},
}

func TestRefineDiagnosis(t *testing.T) {
	path := writeFile(t, t.TempDir(), "job.log", unsureLog)
	for _, tt := range llmCases {
		t.Run(tt.name, func(t *testing.T) {
			d, err := failure.DiagnoseFile(path, failure.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			if !UnsureVerdict(d, 0.7) {
				t.Fatalf("fixture verdict %s %.2f is not unsure", d.Category, d.Confidence)
			}
			before := *d
			srv := llmtest.New(t)
			reply := tt.reply
			if tt.changed {
				reply.Content = `{"category":"infrastructure","component":"node","root_line":3,"reason":"worker process lost"}`
			}
			srv.Enqueue(reply)
			out := RefineDiagnosis(context.Background(), newClient(t, srv), nil, path, d, 0.7)
			if !out.Asked || out.Deterministic == nil || out.Deterministic.Category != "other" || out.Deterministic.Line != 3 {
				t.Fatalf("outcome %+v", out)
			}
			if got := srv.Requests(); len(got) != 1 || !strings.Contains(got[0].Messages[1].Content, "3| ERROR: worker 3 exited") {
				t.Fatalf("window sent: %+v", got)
			}
			if !tt.changed {
				if out.Source != SourceDeterministic || !strings.Contains(out.Note, tt.noteHas) || d.Category != before.Category || d.Action != before.Action {
					t.Fatalf("outcome %+v, diagnosis %+v", out, d)
				}
				return
			}
			if out.Source != SourceLLM || d.Category != failure.Infrastructure || d.Component != "node" || d.Line != 3 ||
				!strings.Contains(out.Note, "llm changed other to infrastructure/node") || d.Evidence[len(d.Evidence)-1] != "llm: worker process lost" {
				t.Fatalf("outcome %+v, diagnosis %+v", out, d)
			}
		})
	}
}

func TestRefineDiagnosisSkips(t *testing.T) {
	dir := t.TempDir()
	oom := writeFile(t, dir, "oom.log", "step 1\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
	ok := writeFile(t, dir, "ok.log", "step 1 | loss 2.1 | 400 ms/step\ndone\n")
	unsure := writeFile(t, dir, "unsure.log", unsureLog)
	tests := []struct {
		name      string
		path      string
		clientErr error
		note      string
	}{
		{"sure verdict", oom, nil, ""},
		{"no failure", ok, nil, ""},
		{"disabled", unsure, llm.ErrDisabled, ""},
		{"misconfigured", unsure, &llm.Error{Op: "chat", Kind: llm.KindRejected, Err: os.ErrInvalid}, "deterministic answer stands: llm rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := failure.DiagnoseFile(tt.path, failure.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			before := *d
			out := RefineDiagnosis(context.Background(), nil, tt.clientErr, tt.path, d, 0.7)
			if out.Asked || out.Source != SourceDeterministic || !strings.HasPrefix(out.Note, tt.note) || (tt.note == "") != (out.Note == "") {
				t.Fatalf("outcome %+v", out)
			}
			if d.Category != before.Category || d.Line != before.Line {
				t.Fatalf("diagnosis changed: %+v", d)
			}
		})
	}
}

func TestRefineStepTime(t *testing.T) {
	lines := []string{"Epoch 1: 10%|█ | 100/1000 [00:50<07:30]", "Epoch 1: 20%|██ | 200/1000 [01:40<06:40]"}
	for _, tt := range llmCases {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			reply := tt.reply
			if tt.changed {
				reply.Content = `{"known":true,"step_time_s":0.5,"line":2}`
			}
			srv.Enqueue(reply)
			rep := &metrics.Report{ProgressLines: lines}
			out := RefineStepTime(context.Background(), newClient(t, srv), nil, rep)
			if !out.Asked {
				t.Fatal("llm not asked")
			}
			if !tt.changed {
				if rep.StepTimeS != nil || out.Source != SourceDeterministic || !strings.Contains(out.Note, tt.noteHas) {
					t.Fatalf("outcome %+v, report %+v", out, rep)
				}
				return
			}
			if rep.StepTimeS == nil || *rep.StepTimeS != 0.5 || rep.Source != StepTimeSource || out.Source != SourceLLM {
				t.Fatalf("outcome %+v, report %+v", out, rep)
			}
		})
	}
}

func TestRefineStepTimeSkips(t *testing.T) {
	known := 0.4
	tests := []struct {
		name string
		rep  metrics.Report
	}{
		{"rule found a step time", metrics.Report{StepTimeS: &known, ProgressLines: []string{"step 1 400ms"}}},
		{"no progress lines", metrics.Report{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t) // fails the test on any request
			rep := tt.rep
			if out := RefineStepTime(context.Background(), newClient(t, srv), nil, &rep); out.Asked || out.Note != "" {
				t.Fatalf("outcome %+v", out)
			}
		})
	}
}

// metadataModel reads one file and reports the steps it states.
func metadataModel(req *openai.ChatCompletionRequest) llmtest.Reply {
	if req.ResponseFormat != nil {
		return llmtest.Reply{Content: `{"findings":[{"field":"steps","value":"5000","file":"conf/hparams.yaml","quote":"total training steps: 5000"},` +
			`{"field":"model","value":"other-model","file":"conf/hparams.yaml","quote":"model: other-model"}]}`}
	}
	if req.Messages[len(req.Messages)-1].Role == openai.ChatMessageRoleUser {
		return llmtest.Reply{ToolCalls: []openai.ToolCall{{Function: openai.FunctionCall{Name: "file_read", Arguments: `{"path":"conf/hparams.yaml"}`}}}}
	}
	return llmtest.Reply{Content: "done"}
}

func TestEnrichSubmit(t *testing.T) {
	dir := t.TempDir()
	script := writeFile(t, dir, "job.sh", "#!/bin/bash\n#SBATCH --time=01:00:00\npython train.py --model resnet50\n")
	writeFile(t, dir, "train.py", "import torch\n")
	writeFile(t, dir, "conf/hparams.yaml", "model: other-model\ntotal training steps: 5000\n")
	srv := llmtest.New(t)
	srv.Respond(metadataModel)
	client := newClient(t, srv)
	req := advisor.SubmitRequest{Job: advisor.JobInfo{WorkDir: dir}, Script: script}

	out := EnrichSubmit(context.Background(), client, nil, &req)
	if out.Source != SourceLLM || out.Filled["steps"] != "5000" || req.Job.Metadata["steps"] != "5000" {
		t.Fatalf("outcome %+v, metadata %v", out, req.Job.Metadata)
	}
	if _, ok := out.Filled["model"]; ok || req.Job.Metadata["model"] != "" {
		t.Fatalf("agent overrode the static model: %v", req.Job.Metadata)
	}
	if notes := out.Notes(); len(notes) != 1 || !strings.Contains(notes[0], "steps=5000") || out.Usage.TotalTokens == 0 {
		t.Fatalf("notes %v usage %+v", notes, out.Usage)
	}
	tokens := srv.Usage().TotalTokens

	// A resubmission through a client sharing the cache costs nothing.
	shared := newClientWithCache(t, srv, client.Cache())
	again := advisor.SubmitRequest{Job: advisor.JobInfo{WorkDir: dir}, Script: script}
	out = EnrichSubmit(context.Background(), shared, nil, &again)
	if !out.Cached || srv.Usage().TotalTokens != tokens || again.Job.Metadata["steps"] != "5000" {
		t.Fatalf("resubmission: cached=%v, %d more tokens", out.Cached, srv.Usage().TotalTokens-tokens)
	}
}

func newClientWithCache(t *testing.T, srv *llmtest.Server, cache llm.Cache) *llm.Client {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.Model, cfg.MaxRetries, cfg.Timeout = true, srv.URL, llmtest.Model, 0, 300*time.Millisecond
	c, err := llm.New(cfg, llm.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnrichSubmitFallsBack(t *testing.T) {
	dir := t.TempDir()
	script := writeFile(t, dir, "job.sh", "#!/bin/bash\npython train.py\n")
	writeFile(t, dir, "train.py", "import torch\n")
	for _, tt := range llmCases[1:] {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Respond(func(*openai.ChatCompletionRequest) llmtest.Reply { return tt.reply })
			req := advisor.SubmitRequest{Job: advisor.JobInfo{WorkDir: dir}, Script: script}
			out := EnrichSubmit(context.Background(), newClient(t, srv), nil, &req)
			if len(req.Job.Metadata) != 0 || out.Source != SourceDeterministic || !strings.Contains(out.Note, tt.noteHas) {
				t.Fatalf("outcome %+v, metadata %v", out, req.Job.Metadata)
			}
		})
	}
	t.Run("disabled", func(t *testing.T) {
		req := advisor.SubmitRequest{Job: advisor.JobInfo{WorkDir: dir}, Script: script}
		if out := EnrichSubmit(context.Background(), nil, llm.ErrDisabled, &req); out.Asked || len(out.Notes()) != 0 || req.Job.Metadata != nil {
			t.Fatalf("outcome %+v", out)
		}
	})
}
