package diagnose

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/schedmate/schedmate/internal/failure"
	"github.com/schedmate/schedmate/internal/llmassist"
)

// Report is what `diagnose --json` prints: exactly one object.
type Report struct {
	JobID           string                `json:"job_id,omitempty"`
	Log             string                `json:"log"`
	Category        string                `json:"category"`
	Component       string                `json:"component"`
	Line            *int                  `json:"line"`
	Text            string                `json:"text"`
	Confidence      float64               `json:"confidence"`
	Evidence        []string              `json:"evidence"`
	Action          string                `json:"action"`
	LinesClassified int                   `json:"lines_classified"`
	Context         []failure.ContextLine `json:"context,omitempty"`
	// AnswerSource, LLMNote and Deterministic are set when the LLM was asked.
	AnswerSource  string                          `json:"answer_source,omitempty"`
	LLMNote       string                          `json:"llm_note,omitempty"`
	Deterministic *llmassist.DeterministicVerdict `json:"deterministic,omitempty"`
}

func newReport(jobID, path string, d *failure.Diagnosis) Report {
	r := Report{JobID: jobID, Log: path, Category: string(d.Category), Component: d.Component, Text: d.Text,
		Confidence: d.Confidence, Evidence: d.Evidence, Action: d.Action, LinesClassified: d.LinesClassified, Context: d.Context}
	if d.Line > 0 {
		line := d.Line
		r.Line = &line
	}
	if r.Evidence == nil {
		r.Evidence = []string{}
	}
	return r
}

func writeJSON(w io.Writer, jobID, path string, d *failure.Diagnosis, assist llmassist.FailureOutcome) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(withAssist(newReport(jobID, path, d), assist)); err != nil {
		return fmt.Errorf("write diagnosis: %w", err)
	}
	return nil
}

// render formats the diagnosis for a person; the renderer decides whether
// colour is used.
func render(re *lipgloss.Renderer, jobID, path string, d *failure.Diagnosis) string {
	var (
		title = re.NewStyle().Bold(true)
		label = re.NewStyle().Faint(true)
		bad   = re.NewStyle().Bold(true).Foreground(lipgloss.Color("9"))
		good  = re.NewStyle().Bold(true).Foreground(lipgloss.Color("10"))
		root  = re.NewStyle().Bold(true).Foreground(lipgloss.Color("11"))
	)
	var b strings.Builder
	subject := path
	if jobID != "" {
		subject = "job " + jobID + " (" + path + ")"
	}
	fmt.Fprintln(&b, title.Render("Diagnosis of "+subject))
	field := func(name, value string) {
		fmt.Fprintf(&b, "%s %s\n", label.Render(fmt.Sprintf("%-11s", name+":")), value)
	}
	if !d.Failed() {
		field("category", good.Render("none"))
		field("result", "the log shows no failure")
		field("classified", fmt.Sprint(d.LinesClassified))
		return b.String()
	}
	cat := string(d.Category)
	if d.Component != "" {
		cat += " / " + d.Component
	}
	field("category", bad.Render(cat)+"  "+label.Render(fmt.Sprintf("(confidence %.2f)", d.Confidence)))
	field("root cause", fmt.Sprintf("line %d", d.Line))
	context := d.Context
	if len(context) == 0 {
		context = []failure.ContextLine{{Number: d.Line, Text: d.Text}}
	}
	width := len(fmt.Sprint(context[len(context)-1].Number))
	for _, c := range context {
		text := c.Text
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		if c.Number == d.Line {
			fmt.Fprintf(&b, "  %s %*d │ %s\n", root.Render(">"), width, c.Number, root.Render(text))
			continue
		}
		fmt.Fprintf(&b, "    %*d │ %s\n", width, c.Number, label.Render(text))
	}
	field("evidence", strings.Join(d.Evidence, ", "))
	field("action", d.Action)
	field("classified", fmt.Sprint(d.LinesClassified))
	return b.String()
}
