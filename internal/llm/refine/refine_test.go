package refine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
	"github.com/schedmate/schedmate/internal/llm/refine"
)

func newRefiner(t *testing.T, srv *llmtest.Server) *refine.Refiner {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.Model, cfg.MaxRetries, cfg.Timeout = true, srv.URL, llmtest.Model, 0, 300*time.Millisecond
	c, err := llm.New(cfg, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &refine.Refiner{LLM: c}
}

var window = []string{
	"[rank0]: step 100 loss 2.1",
	"NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12, opcode 0, len 0, vendor err 129",
	"RuntimeError: NCCL communicator was aborted on rank 0.",
}

func TestRefineFailure(t *testing.T) {
	current := refine.Verdict{Category: "framework"}
	tests := []struct {
		name     string
		replies  []llmtest.Reply
		want     refine.Verdict
		noteHas  string
		wantKind llm.Kind
	}{
		{"changes verdict", []llmtest.Reply{{Content: `{"category":"infrastructure","component":"network","root_line":2,"reason":"IB completion error"}`}},
			refine.Verdict{Category: "infrastructure", Component: "network", Line: 2, Reason: "IB completion error"}, "llm changed framework to infrastructure/network", ""},
		{"agrees", []llmtest.Reply{{Content: `{"category":"framework","component":"none","root_line":3,"reason":"r"}`}},
			refine.Verdict{Category: "framework", Line: 3, Reason: "r"}, "llm agrees", ""},
		{"line out of window dropped", []llmtest.Reply{{Content: `{"category":"framework","component":"none","root_line":99,"reason":"r"}`}},
			refine.Verdict{Category: "framework", Reason: "r"}, "llm agrees", ""},
		{"inconsistent component repaired", []llmtest.Reply{
			{Content: `{"category":"infrastructure","component":"oom","root_line":2,"reason":"r"}`},
			{Content: `{"category":"infrastructure","component":"network","root_line":2,"reason":"r"}`}},
			refine.Verdict{Category: "infrastructure", Component: "network", Line: 2, Reason: "r"}, "changed", ""},
		{"unknown category twice", []llmtest.Reply{{Content: `{"category":"hardware","component":"gpu","root_line":2,"reason":"r"}`}, {Content: `{"category":"hardware","component":"gpu","root_line":2,"reason":"r"}`}},
			current, "deterministic answer stands", llm.KindBadAnswer},
		{"down", []llmtest.Reply{{Status: 502}}, current, "deterministic answer stands", llm.KindUnavailable},
		{"slow", []llmtest.Reply{{Delay: 5 * time.Second, Content: "{}"}}, current, "deterministic answer stands", llm.KindTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(tt.replies...)
			got, note, err := newRefiner(t, srv).RefineFailure(context.Background(), window, current)
			if llm.KindOf(err) != tt.wantKind {
				t.Fatalf("err = %v, want kind %q", err, tt.wantKind)
			}
			if got != tt.want || !strings.Contains(note, tt.noteHas) {
				t.Errorf("got %+v, %q\nwant %+v, %q", got, note, tt.want, tt.noteHas)
			}
			sent := srv.Requests()[0].Messages[1].Content
			if !strings.Contains(sent, "2| NCCL WARN NET/IB") || strings.Count(sent, "\n") != len(window)+1 {
				t.Errorf("sent window:\n%s", sent)
			}
		})
	}
}

func TestRefineFailureBoundsWindow(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Reply{Content: `{"category":"none","component":"none","root_line":0,"reason":"fine"}`})
	long := make([]string, 1000)
	for i := range long {
		long[i] = fmt.Sprintf("line %d %s", i, strings.Repeat("x", 2000))
	}
	if _, _, err := newRefiner(t, srv).RefineFailure(context.Background(), long, refine.Verdict{Category: "none"}); err != nil {
		t.Fatal(err)
	}
	sent := srv.Requests()[0].Messages[1].Content
	if n := strings.Count(sent, "\n"); n != refine.MaxWindowLines+1 || len(sent) > refine.MaxWindowLines*600 {
		t.Errorf("sent %d lines, %d bytes", n, len(sent))
	}
}

func TestRefineDisabled(t *testing.T) {
	r := &refine.Refiner{}
	v, note, err := r.RefineFailure(context.Background(), window, refine.Verdict{Category: "script"})
	if !errors.Is(err, llm.ErrDisabled) || v.Category != "script" || note == "" {
		t.Errorf("RefineFailure = %+v, %q, %v", v, note, err)
	}
	if st, _, err := r.ExtractStepTime(context.Background(), window); st != nil || !errors.Is(err, llm.ErrDisabled) {
		t.Errorf("ExtractStepTime = %v, %v", st, err)
	}
	if _, err := r.Embed(context.Background(), window); !errors.Is(err, llm.ErrDisabled) {
		t.Errorf("Embed err = %v", err)
	}
}

func TestExtractStepTime(t *testing.T) {
	lines := []string{"iter 10 | 1.41it/s", "iter 11 | 1.41it/s"}
	tests := []struct {
		name     string
		replies  []llmtest.Reply
		want     float64 // 0: nil
		wantKind llm.Kind
	}{
		{"known", []llmtest.Reply{{Content: `{"known":true,"step_time_s":0.709,"line":2}`}}, 0.709, ""},
		{"unknown", []llmtest.Reply{{Content: `{"known":false,"step_time_s":0,"line":0}`}}, 0, ""},
		{"negative repaired", []llmtest.Reply{{Content: `{"known":true,"step_time_s":-1,"line":2}`}, {Content: `{"known":true,"step_time_s":0.7,"line":2}`}}, 0.7, ""},
		{"string number", []llmtest.Reply{{Content: `{"known":true,"step_time_s":"0.7","line":2}`}, {Content: `nope`}}, 0, llm.KindBadAnswer},
		{"rate limited", []llmtest.Reply{{Status: 429, RetryAfter: time.Hour}}, 0, llm.KindRateLimited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(tt.replies...)
			got, note, err := newRefiner(t, srv).ExtractStepTime(context.Background(), lines)
			if llm.KindOf(err) != tt.wantKind {
				t.Fatalf("err = %v, want %q", err, tt.wantKind)
			}
			if (got == nil) != (tt.want == 0) || got != nil && *got != tt.want || note == "" {
				t.Errorf("got %v (%q), want %v", got, note, tt.want)
			}
		})
	}
}

func TestEmbed(t *testing.T) {
	srv := llmtest.New(t)
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.Model, cfg.EmbeddingModel = true, srv.URL, llmtest.Model, llmtest.EmbeddingModel
	c, _ := llm.New(cfg, llm.Options{})
	vecs, err := (&refine.Refiner{LLM: c}).Embed(context.Background(), []string{"a b", "c"})
	if err != nil || len(vecs) != 2 || len(vecs[1]) != llmtest.Dimensions {
		t.Fatalf("Embed = %d vectors, %v", len(vecs), err)
	}
}
