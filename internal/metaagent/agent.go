// Package metaagent extracts workload metadata (model, dataset, batch size,
// epochs or steps, framework, sequence length) from a job's working
// directory with a ReAct-style LLM agent that may only list and read the
// job's code and configuration files.
//
// Several samples are drawn and voted per field; a value is kept only when a
// majority of samples agree on it and at least one of them quotes a line,
// read during the session, that contains it. The result is merged with the
// metadata found statically (from the command line and the batch script):
// static values win every conflict, because they are the literal arguments
// the job runs with, while a file the agent reads may hold a default that
// the command line overrides. The agent only fills the fields that static
// extraction left empty; conflicts are reported, never applied.
//
// Answers are cached by a content hash of the inputs (model, command,
// script, and the listed code files' contents), so a resubmission of an
// unchanged job costs no tokens.
package metaagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/schedmate/schedmate/internal/llm"
)

// Metadata is the workload description the estimator retrieves on.
type Metadata struct {
	Model     string `json:"model,omitempty"`
	Dataset   string `json:"dataset,omitempty"`
	BatchSize int64  `json:"batch_size,omitempty"`
	Epochs    int64  `json:"epochs,omitempty"`
	Steps     int64  `json:"steps,omitempty"`
	Framework string `json:"framework,omitempty"`
	SeqLen    int64  `json:"seq_len,omitempty"`
}

// Fields are the metadata fields, in schema order.
var Fields = []string{"model", "dataset", "batch_size", "epochs", "steps", "framework", "seq_len"}

// get returns a field's value as text ("" when empty).
func (m *Metadata) get(field string) string {
	switch field {
	case "model":
		return m.Model
	case "dataset":
		return m.Dataset
	case "framework":
		return m.Framework
	}
	if n := *m.number(field); n != 0 {
		return fmt.Sprint(n)
	}
	return ""
}

// set stores a normalised value; numbers must already be valid.
func (m *Metadata) set(field, value string) {
	switch field {
	case "model":
		m.Model = value
	case "dataset":
		m.Dataset = value
	case "framework":
		m.Framework = value
	default:
		n, _ := parseCount(value)
		*m.number(field) = n
	}
}

func (m *Metadata) number(field string) *int64 {
	switch field {
	case "batch_size":
		return &m.BatchSize
	case "epochs":
		return &m.Epochs
	case "steps":
		return &m.Steps
	case "seq_len":
		return &m.SeqLen
	}
	panic("metaagent: unknown field " + field)
}

// Input is what the agent starts from.
type Input struct {
	// WorkDir is the job's working directory.
	WorkDir string
	// Command is the command line the job runs.
	Command string
	// Script is the batch script's text, if any.
	Script string
}

// Conflict is a field where the agent's voted value differs from the static one.
type Conflict struct {
	Field  string `json:"field"`
	Static string `json:"static"`
	Agent  string `json:"agent"`
}

// Result is the merged metadata with where each field came from.
type Result struct {
	// Metadata is the merged answer.
	Metadata Metadata `json:"metadata"`
	// Sources maps each non-empty field to "static" or "agent".
	Sources map[string]string `json:"sources"`
	// Confidence maps agent-filled fields to their share of votes.
	Confidence map[string]float64 `json:"confidence,omitempty"`
	// Evidence maps agent-filled fields to the quoted line that backs them.
	Evidence map[string]string `json:"evidence,omitempty"`
	// Conflicts lists disagreements that were resolved in favour of static.
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Usage is what this extraction cost (zero on a cache hit).
	Usage llm.Usage `json:"usage"`
	// Cached is true when the agent's answer came from the cache.
	Cached bool `json:"cached,omitempty"`
	// Note explains why the static answer stands alone, when it does.
	Note string `json:"note,omitempty"`
}

// Agent runs metadata extraction.
type Agent struct {
	// LLM is the model endpoint; nil leaves the static answer alone.
	LLM *llm.Client
	// Cache keeps voted answers by input hash; nil disables it.
	Cache llm.Cache
	// Samples is how many independent runs vote (default 3).
	Samples int
	// MaxSteps bounds tool-calling turns per sample (default 8).
	MaxSteps int
}

// agentVersion changes the cache key when prompts or rules change.
const agentVersion = "metaagent/1"

// Extract runs the agent over in and merges its voted findings into static.
// LLM problems never fail the call: the static answer stands and Note says
// why. Only an unusable working directory is an error.
func (a *Agent) Extract(ctx context.Context, in Input, static Metadata) (Result, error) {
	ws, err := NewWorkspace(in.WorkDir)
	if err != nil {
		return Result{}, fmt.Errorf("extract metadata: %w", err)
	}
	if a.LLM == nil {
		return merge(static, nil, "llm disabled; static metadata only"), nil
	}
	key, err := a.cacheKey(ws, in)
	if err != nil {
		return Result{}, fmt.Errorf("extract metadata: %w", err)
	}
	if v, ok := a.cached(key); ok {
		r := merge(static, v, "")
		r.Cached = true
		return r, nil
	}
	samples := max(a.Samples, 1)
	if a.Samples == 0 {
		samples = 3
	}
	var runs []run
	var usage llm.Usage
	var lastErr error
	for i := range samples {
		r, u, err := a.sample(ctx, ws, in, i)
		usage = usage.Add(u)
		if err != nil {
			lastErr = err
			if ctx.Err() != nil || llm.KindOf(err) != llm.KindBadAnswer {
				break // the endpoint is down or slow: stop spending time
			}
			continue
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		res := merge(static, nil, llm.Note(lastErr))
		res.Usage = usage
		return res, nil
	}
	v := vote(runs, samples)
	if lastErr == nil {
		a.store(key, v)
	}
	res := merge(static, v, "")
	res.Usage = usage
	return res, nil
}

// cacheKey hashes everything the agent could look at.
func (a *Agent) cacheKey(ws *Workspace, in Input) (string, error) {
	files, _, err := ws.Files()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		text, _, err := ws.Read(f.Path)
		if err != nil {
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f.Path, len(text))
		h.Write([]byte(text))
	}
	return llm.HashKey(agentVersion, a.LLM.Config().Model, a.Samples, a.MaxSteps, in.Command, in.Script, hex.EncodeToString(h.Sum(nil)))
}

func (a *Agent) cached(key string) (*voted, bool) {
	if a.Cache == nil {
		return nil, false
	}
	b, ok, err := a.Cache.Get(key)
	if err != nil || !ok {
		return nil, false
	}
	var v voted
	if json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	return &v, true
}

func (a *Agent) store(key string, v *voted) {
	if a.Cache == nil {
		return
	}
	if b, err := json.Marshal(v); err == nil {
		_ = a.Cache.Put(key, b)
	}
}

// finding is one field value the model reports, with the line that shows it.
type finding struct {
	Field string `json:"field" enum:"model,dataset,batch_size,epochs,steps,framework,seq_len" description:"which metadata field"`
	Value string `json:"value" description:"the value, as written in the source"`
	File  string `json:"file" description:"relative path of the file the value was read from, or 'command'"`
	Quote string `json:"quote" description:"the exact source line that contains the value"`
}

// report is the final JSON answer of one sample.
type report struct {
	Findings []finding `json:"findings"`
}

// run is one sample's checked findings.
type run struct {
	values   map[string]string
	evidence map[string]string
}

const systemPrompt = `You extract workload metadata for a GPU cluster scheduler from a training job's source.
Tools: file_tree lists the job's code and configuration files; file_read returns one file.
Work step by step: start from the command and the batch script, read the launch script and the configuration files it uses, and stop when you know the fields or nothing relevant is left.
Fields: model (architecture or checkpoint name), dataset, batch_size (per device unless only global is given), epochs, steps (total training steps or iterations), framework (e.g. pytorch, deepspeed, megatron, nemo, jax, tensorflow, lightning, transformers), seq_len (sequence or context length).
Report only values you saw; for each give the file ("command" for the command line or script) and the exact line that contains the value. Command-line arguments override configuration files.`

func (a *Agent) sample(ctx context.Context, ws *Workspace, in Input, i int) (run, llm.Usage, error) {
	var usage llm.Usage
	seen := map[string]string{"command": in.Command + "\n" + in.Script}
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: systemPrompt},
		{Role: openai.ChatMessageRoleUser, Content: fmt.Sprintf("Working directory: %s\nCommand: %s\nBatch script:\n%s", ws.root, in.Command, boundText(in.Script, DefaultMaxRead))},
	}
	seed := i
	temp := float32(0)
	if i > 0 {
		temp = 0.7
	}
	steps := a.MaxSteps
	if steps <= 0 {
		steps = 8
	}
	for step := 0; step < steps; step++ {
		resp, err := a.LLM.Chat(ctx, llm.ChatRequest{Purpose: "metaagent", Messages: msgs, Tools: tools, Temperature: temp, Seed: &seed})
		if err != nil {
			return run{}, usage, err
		}
		usage = usage.Add(resp.Usage)
		if len(resp.Message.ToolCalls) == 0 {
			break
		}
		msgs = append(msgs, resp.Message)
		for _, tc := range resp.Message.ToolCalls {
			out := callTool(ws, tc, seen)
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Content: out})
		}
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "Now give the metadata you found as JSON: one finding per field you are sure of."})
	schema, err := llm.SchemaFor[report]("workload_metadata")
	if err != nil {
		return run{}, usage, err
	}
	rep, u, err := llm.Decode[report](ctx, a.LLM, llm.ChatRequest{Purpose: "metaagent", Messages: msgs, Temperature: temp, Seed: &seed}, schema)
	usage = usage.Add(u)
	if err != nil {
		return run{}, usage, err
	}
	return check(rep, seen), usage, nil
}

// check keeps the findings whose values are well-formed, and marks those
// whose quote appears in text the agent actually read and contains the value.
func check(rep report, seen map[string]string) run {
	r := run{values: map[string]string{}, evidence: map[string]string{}}
	for _, f := range rep.Findings {
		v, ok := normalise(f.Field, f.Value)
		if !ok {
			continue
		}
		if _, dup := r.values[f.Field]; dup {
			continue
		}
		r.values[f.Field] = v
		quote := strings.TrimSpace(f.Quote)
		src, read := seen[sourceName(f.File)]
		if read && quote != "" && strings.Contains(src, quote) && quotes(quote, f.Value, v) {
			r.evidence[f.Field] = f.File + ": " + boundText(quote, 200)
		}
	}
	return r
}

// quotes reports whether a quoted line shows a value, as written or, for
// counts, as the normalised number ("10,000" against "max_steps: 10000").
func quotes(quote, raw, norm string) bool {
	q := strings.ToLower(quote)
	if strings.Contains(q, strings.ToLower(strings.TrimSpace(raw))) {
		return true
	}
	return strings.Contains(strings.NewReplacer(",", "", "_", "").Replace(q), norm)
}

// boundText cuts s to n bytes on a rune boundary.
func boundText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "\n[truncated]"
}
