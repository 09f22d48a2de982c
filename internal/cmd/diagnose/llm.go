package diagnose

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/failure"
	"github.com/schedmate/schedmate/internal/llmassist"
)

// refineVerdict asks the LLM about an unsure verdict when llm.enabled is
// set and --no-llm is not; otherwise it changes nothing.
func refineVerdict(ctx context.Context, f *factory.Factory, opts Options, path string, d *failure.Diagnosis) llmassist.FailureOutcome {
	if opts.NoLLM {
		return llmassist.FailureOutcome{}
	}
	cfg, err := f.Config()
	if err != nil || !cfg.LLM.Enabled {
		return llmassist.FailureOutcome{}
	}
	client, err := f.LLM()
	return llmassist.RefineDiagnosis(ctx, client, err, path, d, cfg.Failure.RequeueMinConfidence)
}

// withAssist adds where the answer came from to the JSON report.
func withAssist(r Report, a llmassist.FailureOutcome) Report {
	if a.Note == "" && !a.Asked {
		return r
	}
	r.AnswerSource, r.LLMNote, r.Deterministic = a.Source, a.Note, a.Deterministic
	return r
}

// renderAssist tells a person where the answer came from; empty when the
// LLM was not involved.
func renderAssist(re *lipgloss.Renderer, a llmassist.FailureOutcome) string {
	if a.Note == "" && !a.Asked {
		return ""
	}
	label := re.NewStyle().Faint(true)
	var b strings.Builder
	source := a.Source
	if d := a.Deterministic; d != nil && a.Source == llmassist.SourceLLM {
		det := d.Category
		if d.Component != "" {
			det += " / " + d.Component
		}
		source += fmt.Sprintf(" (deterministic: %s, line %d, confidence %.2f)", det, d.Line, d.Confidence)
	}
	fmt.Fprintf(&b, "%s %s\n", label.Render("answer:    "), source)
	if a.Note != "" {
		fmt.Fprintf(&b, "%s %s\n", label.Render("llm note:  "), a.Note)
	}
	return b.String()
}
