package diagnose

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/schedmate/schedmate/internal/failure"
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

func writeJSON(w io.Writer, jobID, path string, d *failure.Diagnosis) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(newReport(jobID, path, d)); err != nil {
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
	if !d.Failed() {
		fmt.Fprintf(&b, "%s %s\n", label.Render("category:"), good.Render("none"))
		fmt.Fprintf(&b, "%s the log shows no failure (%d lines classified)\n", label.Render("result:  "), d.LinesClassified)
		return b.String()
	}
	cat := string(d.Category)
	if d.Component != "" {
		cat += " / " + d.Component
	}
	fmt.Fprintf(&b, "%s %s  %s\n", label.Render("category:  "), bad.Render(cat), label.Render(fmt.Sprintf("(confidence %.2f)", d.Confidence)))
	fmt.Fprintf(&b, "%s line %d\n", label.Render("root cause:"), d.Line)
	width := len(fmt.Sprint(d.Line + len(d.Context)))
	for _, c := range d.Context {
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
	if len(d.Context) == 0 {
		fmt.Fprintf(&b, "  %s %d │ %s\n", root.Render(">"), d.Line, root.Render(d.Text))
	}
	fmt.Fprintf(&b, "%s %s\n", label.Render("evidence:  "), strings.Join(d.Evidence, ", "))
	fmt.Fprintf(&b, "%s %s\n", label.Render("action:    "), d.Action)
	fmt.Fprintf(&b, "%s %d\n", label.Render("classified:"), d.LinesClassified)
	return b.String()
}
