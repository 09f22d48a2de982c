// Package llmassist connects schedmate's deterministic answers to the
// optional LLM refinements: it decides when an answer is worth a second
// opinion, sends only the few lines that answer came from, and maps the
// reply back. Every function keeps the deterministic answer, with a note,
// when the LLM is disabled, down, slow or answers garbage. The Slurm hooks
// never use this package.
package llmassist

import (
	"context"
	"errors"
	"fmt"

	"github.com/schedmate/schedmate/internal/failure"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/refine"
)

// Where an answer came from.
const (
	SourceDeterministic = "deterministic"
	SourceLLM           = "llm"
)

// WindowBefore and WindowAfter size the failure window sent to the LLM
// around the located root line.
const (
	WindowBefore = 60
	WindowAfter  = 40
)

// Outcome says whether the LLM was asked and what became of its answer.
type Outcome struct {
	// Asked is true when the LLM was asked (successfully or not).
	Asked bool
	// Source is SourceLLM when the final answer is the LLM's, else SourceDeterministic.
	Source string
	// Note explains the outcome: agreement, change, or why the deterministic answer stands.
	Note string
}

// FailureOutcome is an Outcome for a failure verdict, with the verdict the
// deterministic classifier gave before the LLM changed it.
type FailureOutcome struct {
	Outcome
	// Deterministic is the classifier's own verdict; set when the LLM was asked.
	Deterministic *DeterministicVerdict
}

// DeterministicVerdict is the classifier's verdict kept next to the LLM's.
type DeterministicVerdict struct {
	Category   string  `json:"category"`
	Component  string  `json:"component"`
	Line       int     `json:"line"`
	Confidence float64 `json:"confidence"`
}

// UnsureVerdict reports whether a failure verdict deserves the LLM's
// opinion: a located failure whose confidence is below minConfidence, or
// whose category is other. A log without a located failure has no window
// to send.
func UnsureVerdict(d *failure.Diagnosis, minConfidence float64) bool {
	return d.Failed() && d.Line > 0 && (d.Confidence < minConfidence || d.Category == failure.Other)
}

// Window returns the located window of the log at path: the cleaned lines
// from WindowBefore lines before the root line to WindowAfter lines after
// it, and the 1-based number of its first line.
func Window(path string, d *failure.Diagnosis) ([]string, int, error) {
	if d.Line <= 0 {
		return nil, 0, errors.New("no located root line")
	}
	opts := failure.DefaultOptions()
	opts.ContextLines = max(WindowBefore, WindowAfter)
	wd, err := failure.DiagnoseFile(path, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("read failure window: %w", err)
	}
	var lines []string
	first := 0
	for _, c := range wd.Context {
		if c.Number < d.Line-WindowBefore || c.Number > d.Line+WindowAfter {
			continue
		}
		if first == 0 {
			first = c.Number
		}
		lines = append(lines, c.Text)
	}
	if len(lines) == 0 {
		return nil, 0, fmt.Errorf("read failure window: no lines around line %d", d.Line)
	}
	return lines, first, nil
}

// RefineDiagnosis asks the LLM about an unsure verdict, sending only the
// located window, and applies its answer to d. client may be nil with
// clientErr saying why: a disabled layer leaves no note, a misconfigured
// one leaves d as it is with a note, as any LLM failure does.
func RefineDiagnosis(ctx context.Context, client *llm.Client, clientErr error, path string, d *failure.Diagnosis, minConfidence float64) FailureOutcome {
	out := FailureOutcome{Outcome: Outcome{Source: SourceDeterministic}}
	if !UnsureVerdict(d, minConfidence) {
		return out
	}
	if client == nil {
		out.Note = unavailableNote(clientErr)
		return out
	}
	out.Asked = true
	out.Deterministic = &DeterministicVerdict{Category: string(d.Category), Component: d.Component, Line: d.Line, Confidence: d.Confidence}
	window, first, err := Window(path, d)
	if err != nil {
		out.Note = "deterministic answer stands: " + err.Error()
		return out
	}
	current := refine.Verdict{Category: string(d.Category), Component: d.Component, Line: d.Line - first + 1}
	r := refine.Refiner{LLM: client}
	v, note, err := r.RefineFailure(ctx, window, current)
	out.Note = note
	if err != nil {
		return out
	}
	if v.Category == string(failure.None) {
		out.Note = "deterministic answer stands: llm saw no failure in the window"
		return out
	}
	out.Source = SourceLLM
	apply(d, v, window, first)
	return out
}

// apply rewrites d with the LLM's verdict; the evidence keeps the
// classifier's and adds the LLM's reason.
func apply(d *failure.Diagnosis, v refine.Verdict, window []string, first int) {
	changed := v.Category != string(d.Category) || v.Component != d.Component
	d.Category, d.Component = failure.Category(v.Category), v.Component
	if v.Line > 0 && first+v.Line-1 != d.Line {
		around := max(len(d.Context)-1, 0) / 2
		d.Line, d.Text = first+v.Line-1, window[v.Line-1]
		d.Context = nil
		for i := max(v.Line-1-around, 0); i < min(v.Line+around, len(window)); i++ {
			d.Context = append(d.Context, failure.ContextLine{Number: first + i, Text: window[i]})
		}
	}
	if v.Reason != "" {
		d.Evidence = append(d.Evidence, "llm: "+v.Reason)
	}
	if changed {
		d.Action = action(d.Category, d.Component)
	}
}

// action is the recommended action for a verdict the signatures did not give.
func action(cat failure.Category, component string) string {
	switch {
	case cat == failure.Infrastructure:
		return "check the job's nodes (schedmate health) and requeue away from a faulty " + component
	case cat == failure.Framework:
		return "check the versions and compatibility of the framework and its libraries"
	case cat == failure.Script && component == "oom":
		return "reduce the batch size or sequence length, or enable activation checkpointing"
	case cat == failure.Script:
		return "fix the error in the job's script or arguments at the root line"
	}
	return "inspect the log at the root line"
}

// unavailableNote is the note for a client that could not be made: none
// when the layer is simply disabled.
func unavailableNote(err error) string {
	if err == nil || errors.Is(err, llm.ErrDisabled) {
		return ""
	}
	return llm.Note(err)
}
