package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// CheckStatus is the outcome of one endpoint check.
type CheckStatus string

// Check outcomes.
const (
	CheckOK   CheckStatus = "ok"
	CheckWarn CheckStatus = "warn"
	CheckFail CheckStatus = "fail"
	CheckSkip CheckStatus = "skip"
)

// Check is one probe of the endpoint.
type Check struct {
	// Name is "models", "chat", "structured-output", "tool-calls" or "embeddings".
	Name string `json:"name"`
	// Status is the outcome.
	Status CheckStatus `json:"status"`
	// Detail explains the outcome.
	Detail string `json:"detail"`
	// LatencyMS is how long the check's call took.
	LatencyMS int64 `json:"latency_ms"`
	// Kind classifies a failed call.
	Kind Kind `json:"kind,omitempty"`
}

// ProbeReport is the result of Probe.
type ProbeReport struct {
	Endpoint       string  `json:"endpoint"`
	Model          string  `json:"model"`
	EmbeddingModel string  `json:"embedding_model,omitempty"`
	Checks         []Check `json:"checks"`
	Usage          Usage   `json:"usage"`
}

// OK reports whether no check failed.
func (r *ProbeReport) OK() bool {
	for _, c := range r.Checks {
		if c.Status == CheckFail {
			return false
		}
	}
	return true
}

// FirstFailure returns the first failed check's kind, or "" when none failed.
func (r *ProbeReport) FirstFailure() Kind {
	for _, c := range r.Checks {
		if c.Status == CheckFail {
			return c.Kind
		}
	}
	return ""
}

// Probe checks what schedmate needs from the endpoint: the model is
// listed, a chat answers (and how fast), json_schema answers validate, tool
// calls come back well-formed, and embeddings work when configured. An
// unreachable endpoint stops the probe after the first check.
func Probe(ctx context.Context, c *Client) *ProbeReport {
	rep := &ProbeReport{Endpoint: Redact(c.cfg.BaseURL), Model: c.cfg.Model, EmbeddingModel: c.cfg.EmbeddingModel}
	before := c.Usage()
	models := c.probeModels(ctx)
	rep.Checks = append(rep.Checks, models)
	if models.Status == CheckFail && (models.Kind == KindUnavailable || models.Kind == KindTimeout) {
		return rep
	}
	rep.Checks = append(rep.Checks, c.probeChat(ctx), c.probeStructured(ctx), c.probeTools(ctx), c.probeEmbeddings(ctx))
	after := c.Usage()
	rep.Usage = Usage{
		Calls: after.Calls - before.Calls, PromptTokens: after.PromptTokens - before.PromptTokens,
		CompletionTokens: after.CompletionTokens - before.CompletionTokens, TotalTokens: after.TotalTokens - before.TotalTokens,
	}
	return rep
}

func failed(name string, start time.Time, err error) Check {
	return Check{Name: name, Status: CheckFail, Detail: err.Error(), LatencyMS: time.Since(start).Milliseconds(), Kind: KindOf(err)}
}

func (c *Client) probeModels(ctx context.Context) Check {
	start := time.Now()
	ids, err := c.Models(ctx)
	if err != nil {
		return failed("models", start, err)
	}
	ms := time.Since(start).Milliseconds()
	if !slices.Contains(ids, c.cfg.Model) {
		return Check{Name: "models", Status: CheckFail, Kind: KindRejected, LatencyMS: ms,
			Detail: fmt.Sprintf("model %q is not served; the server lists %v", c.cfg.Model, ids)}
	}
	if c.cfg.EmbeddingModel != "" && !slices.Contains(ids, c.cfg.EmbeddingModel) {
		return Check{Name: "models", Status: CheckWarn, LatencyMS: ms,
			Detail: fmt.Sprintf("embedding model %q is not listed (some servers serve it elsewhere)", c.cfg.EmbeddingModel)}
	}
	return Check{Name: "models", Status: CheckOK, LatencyMS: ms, Detail: fmt.Sprintf("%d models listed, %s among them", len(ids), c.cfg.Model)}
}

func (c *Client) probeChat(ctx context.Context) Check {
	start := time.Now()
	resp, err := c.Chat(ctx, ChatRequest{Purpose: "doctor", NoCache: true, MaxTokens: 16,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Reply with the single word OK."}}})
	if err != nil {
		return failed("chat", start, err)
	}
	ms := time.Since(start).Milliseconds()
	return Check{Name: "chat", Status: CheckOK, LatencyMS: ms,
		Detail: fmt.Sprintf("answered in %d ms, %d tokens", ms, resp.Usage.TotalTokens)}
}

// probeAnswer is the structured-output probe's schema.
type probeAnswer struct {
	Sum int `json:"sum"`
}

func (c *Client) probeStructured(ctx context.Context) Check {
	start := time.Now()
	schema, err := SchemaFor[probeAnswer]("probe_sum")
	if err != nil {
		return failed("structured-output", start, err)
	}
	ans, u, err := Decode[probeAnswer](ctx, c, ChatRequest{Purpose: "doctor", NoCache: true, MaxTokens: 64,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "What is 2 + 3? Answer as JSON with the field sum."}}}, schema)
	if err != nil {
		return failed("structured-output", start, err)
	}
	ms := time.Since(start).Milliseconds()
	switch {
	case ans.Sum != 5:
		return Check{Name: "structured-output", Status: CheckWarn, LatencyMS: ms, Detail: fmt.Sprintf("valid JSON but sum=%d, want 5", ans.Sum)}
	case u.Calls > 1:
		return Check{Name: "structured-output", Status: CheckWarn, LatencyMS: ms, Detail: "valid only after a repair retry: response_format json_schema may be ignored"}
	}
	return Check{Name: "structured-output", Status: CheckOK, LatencyMS: ms, Detail: "json_schema answer validated"}
}

var probeTool = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
	Name:        "lookup_job",
	Description: "Look up a job by its id.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"job_id":{"type":"integer"}},"required":["job_id"]}`),
}}

func (c *Client) probeTools(ctx context.Context) Check {
	start := time.Now()
	resp, err := c.Chat(ctx, ChatRequest{Purpose: "doctor", NoCache: true, MaxTokens: 128, Tools: []openai.Tool{probeTool},
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Look up job 42 with the lookup_job tool."}}})
	if err != nil {
		return failed("tool-calls", start, err)
	}
	ms := time.Since(start).Milliseconds()
	if len(resp.Message.ToolCalls) == 0 {
		return Check{Name: "tool-calls", Status: CheckFail, Kind: KindBadAnswer, LatencyMS: ms,
			Detail: "the model answered in text instead of calling the tool (vLLM needs --enable-auto-tool-choice and a --tool-call-parser)"}
	}
	tc := resp.Message.ToolCalls[0]
	var args struct {
		JobID json.Number `json:"job_id"`
	}
	if tc.Function.Name != probeTool.Function.Name || json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil {
		return Check{Name: "tool-calls", Status: CheckFail, Kind: KindBadAnswer, LatencyMS: ms,
			Detail: fmt.Sprintf("malformed tool call %s(%s)", tc.Function.Name, truncate(tc.Function.Arguments, 80))}
	}
	if args.JobID.String() != "42" {
		return Check{Name: "tool-calls", Status: CheckWarn, LatencyMS: ms, Detail: fmt.Sprintf("tool called with job_id=%s, want 42", args.JobID)}
	}
	return Check{Name: "tool-calls", Status: CheckOK, LatencyMS: ms, Detail: "tool call well-formed"}
}

func (c *Client) probeEmbeddings(ctx context.Context) Check {
	if c.cfg.EmbeddingModel == "" {
		return Check{Name: "embeddings", Status: CheckSkip, Detail: "no embedding_model configured; the built-in embedding is used"}
	}
	start := time.Now()
	vecs, err := c.Embed(ctx, []string{"schedmate doctor probe: llama 7b pretraining"})
	if err != nil {
		return failed("embeddings", start, err)
	}
	ms := time.Since(start).Milliseconds()
	if len(vecs) != 1 {
		return failed("embeddings", start, errors.New("no vector returned"))
	}
	return Check{Name: "embeddings", Status: CheckOK, LatencyMS: ms, Detail: fmt.Sprintf("%d dimensions", len(vecs[0]))}
}
