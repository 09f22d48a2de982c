package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// table reads delimited records with a header row and gives access to fields
// by column name.
type table struct {
	r     *csv.Reader
	index map[string]int
	rec   []string
	line  int
}

// newTable reads the header of a delimited table.
func newTable(r io.Reader, comma rune) (*table, error) {
	cr := csv.NewReader(io.LimitReader(r, 1<<40))
	cr.Comma = comma
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	if comma == '|' {
		cr.LazyQuotes = true
	}
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: no header row", ErrFormat)
		}
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	t := &table{r: cr, index: make(map[string]int, len(header)), line: 1}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, dup := t.index[name]; !dup {
			t.index[name] = i
		}
	}
	return t, nil
}

// next advances to the next record; it returns false at the end of input.
func (t *table) next() (bool, error) {
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	t.line++
	if err != nil {
		return false, fmt.Errorf("%w: line %d: %v", ErrFormat, t.line, err)
	}
	for _, f := range rec {
		if len(f) > maxLine {
			return false, fmt.Errorf("%w: line %d: field longer than %d bytes", ErrFormat, t.line, maxLine)
		}
	}
	t.rec = rec
	return true, nil
}

// has reports whether the header named the column.
func (t *table) has(name string) bool {
	_, ok := t.index[name]
	return ok
}

// get returns the named field of the current record, or "".
func (t *table) get(name string) string {
	i, ok := t.index[name]
	if !ok || i >= len(t.rec) {
		return ""
	}
	return strings.TrimSpace(t.rec[i])
}

// require fails unless every named column is present.
func (t *table) require(format string, names ...string) error {
	var missing []string
	for _, n := range names {
		if !t.has(n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s trace lacks column(s) %s", ErrFormat, format, strings.Join(missing, ", "))
	}
	return nil
}

// errAt wraps a field error with its line number.
func (t *table) errAt(field string, err error) error {
	return fmt.Errorf("%w: line %d: %s: %v", ErrFormat, t.line, field, err)
}
