// Package refine asks the optional LLM to refine answers that schedmate's
// deterministic paths have already produced: a failure verdict from the
// located log window, and a step time from the classified progress lines.
// Only those few lines are sent. Every function is pure over its inputs and
// returns the deterministic answer, with a note, when the LLM is disabled,
// down, slow or answers garbage.
package refine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/schedmate/schedmate/internal/llm"
)

// Bounds on what one refinement sends.
const (
	// MaxWindowLines bounds the failure window.
	MaxWindowLines = 200
	// MaxProgressLines bounds the progress lines.
	MaxProgressLines = 40
	// maxLineBytes bounds one sent line.
	maxLineBytes = 512
)

// Refiner holds the LLM client; a nil client makes every refinement a no-op.
type Refiner struct {
	// LLM is the endpoint; nil means the layer is off.
	LLM *llm.Client
}

// Categories and Components are the failure taxonomy the answers are held to.
var (
	Categories = []string{"infrastructure", "framework", "script", "other", "none"}
	Components = []string{"gpu", "nvlink", "network", "node", "other", "oom", "none"}
)

// Verdict is a failure classification.
type Verdict struct {
	// Category is one of Categories.
	Category string
	// Component is one of Components for infrastructure ("oom" for CUDA
	// out-of-memory script failures), else empty.
	Component string
	// Line is the 1-based line in the window that states the root cause, 0 if unknown.
	Line int
	// Reason is a short explanation.
	Reason string
}

// failureAnswer is the JSON the model must return for a failure window.
type failureAnswer struct {
	Category  string `json:"category" enum:"infrastructure,framework,script,other,none" description:"failure type"`
	Component string `json:"component" enum:"gpu,nvlink,network,node,other,oom,none" description:"faulty component: for infrastructure one of gpu, nvlink, network, node, other; oom for CUDA out of memory; else none"`
	RootLine  int    `json:"root_line" description:"number of the first line that states the root cause, 0 if the job did not fail"`
	Reason    string `json:"reason" description:"one sentence"`
}

// Validate holds the component to the category.
func (a *failureAnswer) Validate() error {
	infra := map[string]bool{"gpu": true, "nvlink": true, "network": true, "node": true, "other": true}
	switch {
	case a.Category == "infrastructure" && !infra[a.Component]:
		return fmt.Errorf("component %q is not an infrastructure component (gpu, nvlink, network, node, other)", a.Component)
	case a.Category == "script" && a.Component != "oom" && a.Component != "none":
		return fmt.Errorf("component for a script failure must be oom or none, not %q", a.Component)
	case a.Category != "infrastructure" && a.Category != "script" && a.Component != "none":
		return fmt.Errorf("component must be none for category %q", a.Category)
	case a.RootLine < 0:
		return errors.New("root_line must not be negative")
	}
	return nil
}

const failurePrompt = `You classify why a GPU training job failed, from the part of its log around the first error.
Categories (Acme taxonomy): infrastructure (hardware or system: gpu = ECC errors, GPU fallen off the bus, Xid, driver/CUDA compatibility failures; nvlink; network = InfiniBand/RoCE verbs errors, NCCL network errors, rendezvous or TCP connect timeouts; node = host resources such as /dev/shm exhaustion, bus errors, host OOM killer, full or failing filesystems; other), framework (internal assertions or version, ABI and build incompatibilities of PyTorch, DeepSpeed, NCCL and similar libraries, checkpoint format incompatibilities), script (bugs in the user's code, wrong paths or arguments, missing environment variables; CUDA out of memory is script with component oom), other, none (the job did not fail).
The root cause is the first line that states the cause, not a wrapper such as a traceback header, ChildFailedError or an exit code.`

// RefineFailure asks the LLM to classify the located failure window. It
// returns the LLM's verdict with a note saying whether it changed current;
// on any LLM failure it returns current, a note and the error.
func (r *Refiner) RefineFailure(ctx context.Context, window []string, current Verdict) (Verdict, string, error) {
	if r.LLM == nil {
		return current, llm.Note(llm.ErrDisabled), llm.ErrDisabled
	}
	if len(window) == 0 {
		return current, "no log window to refine", errors.New("refine failure: empty window")
	}
	window = window[:min(len(window), MaxWindowLines)]
	schema, err := llm.SchemaFor[failureAnswer]("failure_verdict")
	if err != nil {
		return current, llm.Note(err), err
	}
	req := llm.ChatRequest{
		Purpose: "refine-failure",
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: failurePrompt},
			{Role: openai.ChatMessageRoleUser, Content: "Log window (line number | text):\n" + numbered(window)},
		},
	}
	ans, _, err := llm.Decode[failureAnswer](ctx, r.LLM, req, schema)
	if err != nil {
		return current, llm.Note(err), err
	}
	v := Verdict{Category: ans.Category, Component: ans.Component, Line: ans.RootLine, Reason: ans.Reason}
	if v.Component == "none" {
		v.Component = ""
	}
	if v.Line > len(window) || v.Category == "none" {
		v.Line = 0
	}
	if v.Category == current.Category && v.Component == current.Component {
		return v, "llm agrees", nil
	}
	return v, fmt.Sprintf("llm changed %s to %s", label(current), label(v)), nil
}

func label(v Verdict) string {
	if v.Component == "" {
		return v.Category
	}
	return v.Category + "/" + v.Component
}

// numbered renders lines as "N| text", each bounded.
func numbered(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		if len(l) > maxLineBytes {
			l = cut(l, maxLineBytes)
		}
		fmt.Fprintf(&b, "%d| %s\n", i+1, l)
	}
	return b.String()
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// stepAnswer is the JSON the model must return for progress lines.
type stepAnswer struct {
	Known     bool    `json:"known" description:"false when the lines hold no per-iteration time, rate or throughput that gives one"`
	StepTimeS float64 `json:"step_time_s" description:"seconds per training iteration at the last training progress line; 0 when unknown"`
	Line      int     `json:"line" description:"number of the line the value comes from; 0 when unknown"`
}

// Validate keeps the step time physical.
func (a *stepAnswer) Validate() error {
	switch {
	case a.Known && (a.StepTimeS <= 0 || a.StepTimeS > 86400):
		return fmt.Errorf("step_time_s %v must be within (0, 86400] when known", a.StepTimeS)
	case !a.Known && a.StepTimeS != 0:
		return errors.New("step_time_s must be 0 when known is false")
	}
	return nil
}

const stepPrompt = `You read training progress lines from a job log and give the wall time of one training iteration, in seconds, at the last training progress line.
Rules: an explicit per-iteration time wins (time: 0.43 -> 0.43; elapsed time per iteration (ms): 1031.7 -> 1.0317; 29ms/step -> 0.029).
Rates are inverted (1.41it/s -> 0.709; 2.98s/it -> 2.98; ups 7.07 -> 0.1414).
Throughput only (tokens/s, samples/s): divide the per-step size printed in the same lines by it; never use outside knowledge.
Timestamps or cumulative clocks only: difference of the last two progress lines divided by the steps between them.
Ignore data-loading time, validation, evaluation, warm-up and checkpoint lines. If nothing gives a step time, answer known=false.`

// ExtractStepTime asks the LLM for the step time in the given progress
// lines (already classified as training progress). It returns nil when the
// LLM says the lines hold none; on any LLM failure it returns nil, a note
// and the error, and the deterministic value stands.
func (r *Refiner) ExtractStepTime(ctx context.Context, progressLines []string) (*float64, string, error) {
	if r.LLM == nil {
		return nil, llm.Note(llm.ErrDisabled), llm.ErrDisabled
	}
	if len(progressLines) == 0 {
		return nil, "no progress lines", nil
	}
	if len(progressLines) > MaxProgressLines {
		progressLines = progressLines[len(progressLines)-MaxProgressLines:]
	}
	schema, err := llm.SchemaFor[stepAnswer]("step_time")
	if err != nil {
		return nil, llm.Note(err), err
	}
	req := llm.ChatRequest{
		Purpose: "refine-steptime",
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: stepPrompt},
			{Role: openai.ChatMessageRoleUser, Content: "Progress lines (line number | text):\n" + numbered(progressLines)},
		},
	}
	ans, _, err := llm.Decode[stepAnswer](ctx, r.LLM, req, schema)
	if err != nil {
		return nil, llm.Note(err), err
	}
	if !ans.Known {
		return nil, "llm found no step time", nil
	}
	v := ans.StepTimeS
	return &v, fmt.Sprintf("llm step time from line %d", ans.Line), nil
}

// Embed returns the LLM server's embeddings of texts, an alternative to
// schedmate's built-in embedding.
func (r *Refiner) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if r.LLM == nil {
		return nil, llm.ErrDisabled
	}
	return r.LLM.Embed(ctx, texts)
}
