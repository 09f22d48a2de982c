package eval

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
)

// llmEnv configures the llm section for srv.
func llmEnv(srv *llmtest.Server) []string {
	return []string{"SCHEDMATE_LLM_ENABLED=true", "SCHEDMATE_LLM_BASE_URL=" + srv.URL, "SCHEDMATE_LLM_MODEL=" + llmtest.Model,
		"SCHEDMATE_LLM_EMBEDDING_MODEL=" + llmtest.EmbeddingModel, "SCHEDMATE_LLM_TIMEOUT=2s", "SCHEDMATE_LLM_MAX_RETRIES=0"}
}

// endpointReport is the --json output of an endpoint replay.
type endpointReport struct {
	Jobs      int                           `json:"jobs"`
	Methods   map[string]map[string]float64 `json:"methods"`
	Embedding *embeddingReport              `json:"embedding"`
}

func TestEvalEstimateEndpointEmbedding(t *testing.T) {
	srv := llmtest.New(t)
	out, err := runCmdEnv(t, llmEnv(srv), true, "estimate", "--trace", swfFixture, "--format", "swf", "--embedding", "endpoint")
	if err != nil {
		t.Fatal(err)
	}
	var r endpointReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	builtin, err := runCmd(t, true, "estimate", "--trace", swfFixture, "--format", "swf")
	if err != nil {
		t.Fatal(err)
	}
	var b endpointReport
	if err := json.Unmarshal([]byte(builtin), &b); err != nil || b.Embedding != nil {
		t.Fatalf("builtin replay names an embedding: %v\n%s", err, builtin)
	}
	for m := range b.Methods {
		if _, ok := r.Methods[m]; !ok {
			t.Errorf("method %s missing from the endpoint replay", m)
		}
	}
	e := r.Embedding
	if e == nil || e.Embedding != "endpoint:test-embed" || e.Texts == 0 || e.Texts > r.Jobs || e.EndpointShare <= 0 || e.EndpointShare > 1 {
		t.Fatalf("embedding report %+v", e)
	}
	server := srv.Usage()
	if e.Usage.TotalTokens != server.TotalTokens || e.Usage.Calls != server.EmbeddingCalls || e.Usage.TotalTokens == 0 {
		t.Errorf("usage %+v, the server counted %+v", e.Usage, server)
	}
	// baselines do not depend on the embedding
	for _, m := range []string{"time_limit", "user_last2_mean", "global_median"} {
		if r.Methods[m]["within_2x"] != b.Methods[m]["within_2x"] {
			t.Errorf("%s changed with the embedding: %v vs %v", m, r.Methods[m], b.Methods[m])
		}
	}
	table, err := runCmdEnv(t, llmEnv(srv), false, "estimate", "--trace", swfFixture, "--format", "swf", "--embedding", "endpoint")
	if err != nil || !strings.Contains(table, "similar jobs compared by endpoint:test-embed in ") {
		t.Errorf("table: %v\n%s", err, table)
	}
}

func TestEvalEstimateEndpointErrors(t *testing.T) {
	srv := llmtest.New(t)
	tests := []struct {
		name  string
		env   []string
		reply *llmtest.Reply
		args  []string
		code  exitcode.Code
	}{
		{"unknown embedding", llmEnv(srv), nil, []string{"--embedding", "bert"}, exitcode.Usage},
		{"no llm configured", nil, nil, []string{"--embedding", "endpoint"}, exitcode.Usage},
		{"endpoint unavailable", llmEnv(srv), &llmtest.Reply{Status: 503}, []string{"--embedding", "endpoint"}, exitcode.Unavailable},
		{"endpoint slow", append(llmEnv(srv), "SCHEDMATE_LLM_TIMEOUT=100ms"), &llmtest.Reply{Delay: 5 * time.Second},
			[]string{"--embedding", "endpoint"}, exitcode.Timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reply != nil {
				srv.EnqueueEmbeddings(*tt.reply)
			}
			args := append([]string{"estimate", "--trace", swfFixture, "--format", "swf"}, tt.args...)
			if _, err := runCmdEnv(t, tt.env, false, args...); exitcode.Of(err) != tt.code {
				t.Errorf("exit %d (%v), want %d", exitcode.Of(err), err, tt.code)
			}
		})
	}
}
