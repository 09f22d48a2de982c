package llm_test

import (
	"context"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
)

// capableModel answers the probes like a model with structured output and tool calling.
func capableModel(req *openai.ChatCompletionRequest) llmtest.Reply {
	switch {
	case req.ResponseFormat != nil:
		return llmtest.Reply{Content: `{"sum":5}`}
	case len(req.Tools) > 0:
		return llmtest.Reply{ToolCalls: []openai.ToolCall{{Function: openai.FunctionCall{Name: "lookup_job", Arguments: `{"job_id":42}`}}}}
	}
	return llmtest.Reply{Content: "OK"}
}

func TestProbe(t *testing.T) {
	textOnly := func(req *openai.ChatCompletionRequest) llmtest.Reply {
		if req.ResponseFormat != nil {
			return llmtest.Reply{Content: "The sum is 5."}
		}
		return llmtest.Reply{Content: "OK"}
	}
	tests := []struct {
		name     string
		model    string
		respond  llmtest.Responder
		want     map[string]llm.CheckStatus
		wantKind llm.Kind
	}{
		{"capable", llmtest.Model, capableModel, map[string]llm.CheckStatus{"models": llm.CheckOK, "chat": llm.CheckOK, "structured-output": llm.CheckOK, "tool-calls": llm.CheckOK, "embeddings": llm.CheckOK}, ""},
		{"text only", llmtest.Model, textOnly, map[string]llm.CheckStatus{"models": llm.CheckOK, "chat": llm.CheckOK, "structured-output": llm.CheckFail, "tool-calls": llm.CheckFail}, llm.KindBadAnswer},
		{"model not served", "other-model", capableModel, map[string]llm.CheckStatus{"models": llm.CheckFail, "chat": llm.CheckFail}, llm.KindRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Respond(tt.respond)
			c, _, _ := newClient(t, srv, func(c *llm.Config) { c.Model = tt.model })
			rep := llm.Probe(context.Background(), c)
			got := map[string]llm.CheckStatus{}
			for _, ch := range rep.Checks {
				got[ch.Name] = ch.Status
			}
			for name, st := range tt.want {
				if got[name] != st {
					t.Errorf("%s = %s, want %s (%+v)", name, got[name], st, rep.Checks)
				}
			}
			if rep.OK() != (tt.wantKind == "") || rep.FirstFailure() != tt.wantKind {
				t.Errorf("OK=%v first failure %q", rep.OK(), rep.FirstFailure())
			}
			if tt.wantKind == "" && rep.Usage.TotalTokens != srv.Usage().TotalTokens {
				t.Errorf("usage %+v, server %+v", rep.Usage, srv.Usage())
			}
		})
	}
}

func TestProbeUnreachable(t *testing.T) {
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.MaxRetries = true, "http://127.0.0.1:1/v1", 0
	c, err := llm.New(cfg, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := llm.Probe(context.Background(), c)
	if len(rep.Checks) != 1 || rep.FirstFailure() != llm.KindUnavailable || !strings.Contains(rep.Checks[0].Detail, "unavailable") {
		t.Errorf("report %+v", rep)
	}
}
