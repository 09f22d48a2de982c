package top

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// SortKey orders the rows.
type SortKey int

// The orders `s` cycles through.
const (
	SortJobID SortKey = iota
	SortETA
	SortStepTime
	SortElapsed
	SortName
	sortKeys
)

// String names the order in the header.
func (k SortKey) String() string {
	return [...]string{"jobid", "eta", "step time", "elapsed", "name"}[k]
}

// Sort orders rows in place by key; ties keep job id order.
func Sort(rows []Row, key SortKey) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		var c int
		switch key {
		case SortETA:
			c = cmp.Compare(a.eta(), b.eta())
		case SortStepTime:
			c = cmp.Compare(b.stepTime(), a.stepTime()) // slowest first
		case SortElapsed:
			c = cmp.Compare(b.Elapsed, a.Elapsed)
		case SortName:
			c = strings.Compare(a.Name, b.Name)
		}
		if c != 0 {
			return c
		}
		return compareJobIDs(a.JobID, b.JobID)
	})
}

// compareJobIDs orders numeric ids numerically ("9" before "10").
func compareJobIDs(a, b string) int {
	if len(a) != len(b) && isNumeric(a) && isNumeric(b) {
		return cmp.Compare(len(a), len(b))
	}
	return strings.Compare(a, b)
}

func isNumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Filter keeps the rows whose id, name, user or nodes contain text
// (case-insensitive).
func Filter(rows []Row, text string) []Row {
	text = strings.ToLower(strings.TrimSpace(text))
	if text == "" {
		return rows
	}
	var out []Row
	for _, r := range rows {
		if strings.Contains(strings.ToLower(r.JobID+" "+r.Name+" "+r.User+" "+r.Nodes), text) {
			out = append(out, r)
		}
	}
	return out
}

// formatRow lays out cells at the column widths, cutting long values.
func formatRow(cols []column, cells []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := ansi.Truncate(cells[i], c.width, "…")
		pad := strings.Repeat(" ", c.width-ansi.StringWidth(v))
		if c.right {
			b.WriteString(pad + v)
		} else if i == len(cols)-1 {
			b.WriteString(v)
		} else {
			b.WriteString(v + pad)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

func headerCells(cols []column) []string {
	cells := make([]string, len(cols))
	for i, c := range cols {
		cells[i] = c.title
	}
	return cells
}

func rowCells(cols []column, r Row) []string {
	cells := make([]string, len(cols))
	for i, c := range cols {
		cells[i] = c.cell(r)
	}
	return cells
}

// WriteTable prints rows as a plain table for scripts and pipes.
func WriteTable(w io.Writer, rows []Row, width int) error {
	cols := visibleColumns(width)
	lines := []string{formatRow(cols, headerCells(cols))}
	for _, r := range rows {
		lines = append(lines, formatRow(cols, rowCells(cols, r)))
	}
	if _, err := fmt.Fprintln(w, strings.Join(lines, "\n")); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// WriteJSON prints rows as one JSON array.
func WriteJSON(w io.Writer, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	for i := range rows {
		rows[i].ElapsedS = rows[i].Elapsed.Seconds()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rows); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
