package history

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/store"
)

// auditOptions are the flags of `history audit`.
type auditOptions struct {
	since string
	limit int
	now   func() time.Time
}

func newAuditCmd(f *factory.Factory) *cobra.Command {
	o := &auditOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the actions schedmate took or would take, oldest first",
		Long: `Every action schedmate takes on the cluster (a requeue, a drain, a resume, a
job comment) is written to the audit log before it is carried out, and its
outcome after. Actions decided in dry-run mode are logged too, marked as
such. This command prints that log.`,
		Args: cobra.NoArgs,
		Example: `  schedmate history audit
  schedmate history audit --since 7d --limit 0
  schedmate --json history audit --since 2026-03-01`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.limit < 0 {
				return exitcode.Errorf(exitcode.Usage, "--limit must be 0 or more, not %d", o.limit)
			}
			var since time.Time
			if o.since != "" {
				t, err := parseSince(o.since, o.now())
				if err != nil {
					return exitcode.New(exitcode.Usage, err)
				}
				since = t
			}
			st, err := openForReading(f)
			if err != nil {
				return err
			}
			entries := []store.AuditEntry{}
			if st != nil {
				if entries, err = st.AuditEntries(since, o.limit); err != nil {
					return factory.StoreError(err)
				}
			}
			return writeList(f, entries, "no audited actions match", writeAudit)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.since, "since", "", "only actions after this: a duration (36h, 7d) or a date (2026-01-31, RFC 3339)")
	fl.IntVarP(&o.limit, "limit", "n", 50, "show at most this many of the newest actions; 0 for all")
	return cmd
}

// writeAudit prints one line per action: when, who, what on which target,
// the outcome and why.
func writeAudit(w io.Writer, entries []store.AuditEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tACTOR\tACTION\tTARGET\tRESULT\tREASON")
	for _, e := range entries {
		action := e.Action
		if e.DryRun {
			action += " (dry run)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.Time.Local().Format("2006-01-02 15:04:05"),
			dash(e.Actor), action, dash(e.Target), dash(auditResult(e)), oneLine(e.Reason, e.Details))
	}
	return tw.Flush()
}

// auditResult is the outcome of an action, with its error when it failed.
func auditResult(e store.AuditEntry) string {
	if e.Err == "" {
		return e.Result
	}
	if e.Result == "" {
		return "error: " + e.Err
	}
	return e.Result + ": " + e.Err
}

// oneLine joins the reason and the details, sorted by key, on one line.
func oneLine(reason string, details map[string]string) string {
	parts := []string{}
	if reason != "" {
		parts = append(parts, reason)
	}
	for _, k := range slices.Sorted(maps.Keys(details)) {
		parts = append(parts, k+"="+details[k])
	}
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
