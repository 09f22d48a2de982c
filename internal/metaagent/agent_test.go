package metaagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
)

const findingsJSON = `{"findings":[
 {"field":"model","value":"llama-7b","file":"configs/train.yaml","quote":"model: llama-7b"},
 {"field":"dataset","value":"openwebtext","file":"configs/train.yaml","quote":"dataset: openwebtext"},
 {"field":"batch_size","value":"32","file":"configs/train.yaml","quote":"batch_size: 32"},
 {"field":"steps","value":"10,000","file":"configs/train.yaml","quote":"max_steps: 10000"},
 {"field":"seq_len","value":"2048","file":"./configs/train.yaml","quote":"seq_len: 2048"},
 {"field":"framework","value":"transformers","file":"train.py","quote":"from transformers import AutoModel"},
 {"field":"epochs","value":"3","file":"configs/train.yaml","quote":"epochs: 3"}
]}`

// fakeModel acts like a tool-using model: list files, read two, answer.
func fakeModel(findings string) llmtest.Responder {
	return func(req *openai.ChatCompletionRequest) llmtest.Reply {
		if req.ResponseFormat != nil {
			return llmtest.Reply{Content: findings}
		}
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == openai.ChatMessageRoleUser:
			return llmtest.Reply{ToolCalls: []openai.ToolCall{{Function: openai.FunctionCall{Name: "file_tree", Arguments: "{}"}}}}
		case strings.Contains(last.Content, "run.sh ("):
			return llmtest.Reply{ToolCalls: []openai.ToolCall{
				{Function: openai.FunctionCall{Name: "file_read", Arguments: `{"path":"run.sh"}`}},
				{Function: openai.FunctionCall{Name: "file_read", Arguments: `{"path":"configs/train.yaml"}`}},
			}}
		}
		return llmtest.Reply{Content: "I have what I need."}
	}
}

func jobDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"run.sh":             "#!/bin/bash\npython train.py --config configs/train.yaml --batch_size 64\n",
		"configs/train.yaml": "model: llama-7b\ndataset: openwebtext\nbatch_size: 32\nmax_steps: 10000\nseq_len: 2048\n",
		"train.py":           "import torch\nfrom transformers import AutoModel\n",
		"data/shard0.json":   "{}",
	})
	return dir
}

func newAgent(t *testing.T, srv *llmtest.Server, cache llm.Cache) *Agent {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.Model, cfg.Timeout, cfg.MaxRetries = true, srv.URL, llmtest.Model, 5*time.Second, 0
	c, err := llm.New(cfg, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &Agent{LLM: c, Cache: cache, Samples: 3, MaxSteps: 4}
}

func TestExtractMergesAndCaches(t *testing.T) {
	srv := llmtest.New(t)
	srv.Respond(fakeModel(findingsJSON))
	agent := newAgent(t, srv, llm.NewMemoryCache())
	dir := jobDir(t)
	in := Input{WorkDir: dir, Command: "bash run.sh", Script: "#SBATCH --gres=gpu:8\nbash run.sh\n"}
	static := Metadata{BatchSize: 64, Framework: "pytorch"}

	first, err := agent.Extract(context.Background(), in, static)
	if err != nil {
		t.Fatal(err)
	}
	want := Metadata{Model: "llama-7b", Dataset: "openwebtext", BatchSize: 64, Steps: 10000, SeqLen: 2048, Framework: "pytorch"}
	if first.Metadata != want {
		t.Errorf("metadata = %+v\nwant       %+v", first.Metadata, want)
	}
	if first.Sources["batch_size"] != "static" || first.Sources["model"] != "agent" || first.Sources["epochs"] != "" {
		t.Errorf("sources = %v", first.Sources)
	}
	if len(first.Conflicts) != 1 || first.Conflicts[0] != (Conflict{Field: "batch_size", Static: "64", Agent: "32"}) {
		t.Errorf("conflicts = %+v", first.Conflicts)
	}
	if first.Confidence["model"] != 1 || !strings.Contains(first.Evidence["steps"], "max_steps: 10000") {
		t.Errorf("confidence %v evidence %v", first.Confidence, first.Evidence)
	}
	firstTokens := srv.Usage().TotalTokens
	if firstTokens == 0 || first.Usage.TotalTokens != firstTokens || first.Cached {
		t.Fatalf("first submission: server counted %d tokens, agent %d", firstTokens, first.Usage.TotalTokens)
	}

	second, err := agent.Extract(context.Background(), in, static)
	if err != nil {
		t.Fatal(err)
	}
	resubmitTokens := srv.Usage().TotalTokens - firstTokens
	if resubmitTokens != 0 || !second.Cached || second.Metadata != want {
		t.Errorf("resubmission cost %d tokens (cached=%v), metadata %+v", resubmitTokens, second.Cached, second.Metadata)
	}
	t.Logf("tokens per job: first submission %d (%d calls), resubmission %d",
		firstTokens, srv.Usage().ChatCalls, resubmitTokens)

	if err := os.WriteFile(filepath.Join(dir, "configs/train.yaml"), []byte("model: llama-13b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	third, err := agent.Extract(context.Background(), in, static)
	if err != nil {
		t.Fatal(err)
	}
	if third.Cached || srv.Usage().TotalTokens == firstTokens {
		t.Errorf("changed code was served from the cache")
	}
}

func TestExtractFallsBack(t *testing.T) {
	static := Metadata{Model: "resnet50", Framework: "pytorch"}
	tests := []struct {
		name      string
		replies   []llmtest.Reply
		wantCalls int
		wantNote  string
	}{
		{"endpoint down", []llmtest.Reply{{Status: 503}}, 1, "unavailable"},
		{"endpoint slow", []llmtest.Reply{{Content: "late", Delay: 10 * time.Second}}, 1, "timeout"},
		{"garbage answers", []llmtest.Reply{
			{Content: "done"}, {Content: "not json"}, {Content: "still not json"},
			{Content: "done"}, {Content: "x"}, {Content: "y"},
			{Content: "done"}, {Content: "x"}, {Content: "y"},
		}, 9, "bad-answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(tt.replies...)
			agent := newAgent(t, srv, llm.NewMemoryCache())
			cfg := agent.LLM.Config()
			cfg.Timeout = 300 * time.Millisecond
			agent.LLM, _ = llm.New(cfg, llm.Options{})
			got, err := agent.Extract(context.Background(), Input{WorkDir: jobDir(t), Command: "python train.py"}, static)
			if err != nil {
				t.Fatalf("Extract failed instead of falling back: %v", err)
			}
			if got.Metadata != static || !strings.Contains(got.Note, tt.wantNote) || !strings.Contains(got.Note, "deterministic answer stands") {
				t.Errorf("got %+v", got)
			}
			if n := len(srv.Requests()); n != tt.wantCalls {
				t.Errorf("server saw %d requests, want %d", n, tt.wantCalls)
			}
		})
	}
}

func TestExtractWithoutLLM(t *testing.T) {
	got, err := (&Agent{}).Extract(context.Background(), Input{WorkDir: jobDir(t)}, Metadata{Steps: 5})
	if err != nil || got.Metadata.Steps != 5 || got.Sources["steps"] != "static" || got.Note == "" {
		t.Errorf("got %+v, %v", got, err)
	}
	if _, err := (&Agent{}).Extract(context.Background(), Input{WorkDir: "/nonexistent/dir"}, Metadata{}); err == nil {
		t.Error("missing working directory was accepted")
	}
}

func TestVote(t *testing.T) {
	ev := func(s string) map[string]string { return map[string]string{"model": s} }
	tests := []struct {
		name    string
		runs    []run
		samples int
		want    string
		conf    float64
	}{
		{"unanimous", []run{{ev("gpt2"), ev("q")}, {ev("GPT2"), nil}, {ev("gpt2"), nil}}, 3, "gpt2", 1},
		{"majority", []run{{ev("gpt2"), ev("q")}, {ev("gpt2"), nil}, {ev("bert"), ev("q")}}, 3, "gpt2", 2.0 / 3},
		{"no majority", []run{{ev("gpt2"), ev("q")}, {ev("bert"), ev("q")}, {ev("t5"), ev("q")}}, 3, "", 0},
		{"majority without evidence", []run{{ev("gpt2"), nil}, {ev("gpt2"), nil}, {ev("bert"), ev("q")}}, 3, "", 0},
		{"failed samples count against", []run{{ev("gpt2"), ev("q")}}, 3, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := vote(tt.runs, tt.samples)
			if v.Values["model"] != tt.want || v.Confidence["model"] != tt.conf {
				t.Errorf("vote = %q (%v), want %q (%v)", v.Values["model"], v.Confidence["model"], tt.want, tt.conf)
			}
		})
	}
}

func TestNormalise(t *testing.T) {
	tests := []struct {
		field, in, want string
		ok              bool
	}{
		{"batch_size", "1,024", "1024", true},
		{"steps", "100k", "100000", true},
		{"steps", "1.5M", "1500000", true},
		{"steps", "1e5", "100000", true},
		{"steps", "0", "", false},
		{"steps", "-5", "", false},
		{"epochs", "2.5", "", false},
		{"seq_len", "long", "", false},
		{"model", ` "Llama-2-7b" `, "Llama-2-7b", true},
		{"model", "unknown", "", false},
		{"framework", "PyTorch", "pytorch", true},
		{"nonsense", "x", "", false},
	}
	for _, tt := range tests {
		got, ok := normalise(tt.field, tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("normalise(%s, %q) = %q, %v", tt.field, tt.in, got, ok)
		}
	}
}

func FuzzNormalise(f *testing.F) {
	for _, s := range []string{"1,024", "32k", "1e5", "NaN", "Inf", "9e99", "llama"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, field := range Fields {
			v, ok := normalise(field, s)
			if !ok {
				continue
			}
			var m Metadata
			m.set(field, v)
			if m.get(field) == "" {
				t.Errorf("%s: accepted %q but stored nothing", field, s)
			}
		}
	})
}
