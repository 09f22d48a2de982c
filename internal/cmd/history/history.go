// Package history implements `schedmate history`: listing and showing the
// jobs schedmate has recorded, importing earlier jobs from sacct, and
// storing an embedding endpoint's vectors of them.
package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/factory"
	jobhistory "github.com/schedmate/schedmate/internal/history"
	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
)

// NewCmd returns the history command group.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List, show, import and embed recorded jobs; show the audit log",
		Long: `schedmate records every job that ends (from EpilogSlurmctld) together with
what was seen at submit time. That history feeds duration estimates.`,
	}
	cmd.AddCommand(newListCmd(f), newShowCmd(f), newAuditCmd(f), newImportCmd(f), newEmbedCmd(f))
	return cmd
}

// openForReading applies spooled records when there are any and the
// database can be written, then returns the store for reading. A database
// that does not exist yet reads as empty: st is nil with no error.
func openForReading(f *factory.Factory) (*store.Store, error) {
	path, err := f.StorePath()
	if err != nil {
		return nil, err
	}
	dir := spool.ForStore(path)
	if pending, err := spool.New(dir).Pending(); err == nil && len(pending) > 0 {
		drainSpool(f, dir)
	}
	st, err := f.StoreReadOnly()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return st, err
}

// drainSpool applies the spool when the database opens read-write; a
// reader without write access just leaves it for the next hook.
func drainSpool(f *factory.Factory, dir string) {
	st, err := f.Store()
	if err != nil {
		f.Logger().Info("spooled records left for a writer", "spool", dir, "err", err)
		return
	}
	res, err := jobhistory.DrainSpool(st, dir)
	if err != nil {
		fmt.Fprintf(f.IO.ErrOut, "schedmate: applying spooled records: %v\n", err)
	}
	if res.SetAside > 0 {
		fmt.Fprintf(f.IO.ErrOut, "schedmate: %d unreadable spool records set aside in %s (*.bad)\n", res.SetAside, dir)
	}
}

// writeJSON prints v as one indented JSON value.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeList prints items as JSON with --json, else as a table, or says
// none on stderr when there are none.
func writeList[T any](f *factory.Factory, items []T, none string, table func(io.Writer, []T) error) error {
	if f.JSON {
		return writeJSON(f.IO.Out, items)
	}
	if len(items) == 0 {
		fmt.Fprintln(f.IO.ErrOut, none)
		return nil
	}
	return table(f.IO.Out, items)
}
