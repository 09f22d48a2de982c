package llmassist

import (
	"context"

	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/refine"
	"github.com/schedmate/schedmate/internal/metrics"
)

// StepTimeSource is the Report.Source of a step time the LLM read.
const StepTimeSource = "llm"

// UnknownStepTime reports whether a metrics report deserves the LLM's
// reading: no rule found a step time, but the log has classified progress
// lines to read it from.
func UnknownStepTime(rep *metrics.Report) bool {
	return rep.StepTimeS == nil && len(rep.ProgressLines) > 0
}

// RefineStepTime asks the LLM for the step time of a report whose rules
// found none, sending only the report's progress lines, and sets
// rep.StepTimeS and rep.Source from its answer. client may be nil with
// clientErr saying why: a disabled layer leaves no note, a misconfigured
// one leaves rep as it is with a note, as any LLM failure does.
func RefineStepTime(ctx context.Context, client *llm.Client, clientErr error, rep *metrics.Report) Outcome {
	out := Outcome{Source: SourceDeterministic}
	if !UnknownStepTime(rep) {
		return out
	}
	if client == nil {
		out.Note = unavailableNote(clientErr)
		return out
	}
	out.Asked = true
	r := refine.Refiner{LLM: client}
	v, note, err := r.ExtractStepTime(ctx, rep.ProgressLines)
	out.Note = note
	if err != nil || v == nil {
		return out
	}
	out.Source = SourceLLM
	rep.StepTimeS, rep.Source = v, StepTimeSource
	return out
}
