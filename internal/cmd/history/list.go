package history

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/store"
)

// listOptions are the flags of `history list`.
type listOptions struct {
	user   string
	states []string
	since  string
	limit  int
	now    func() time.Time
}

// filter is a validated listOptions.
type filter struct {
	user   string
	states map[string]bool
	since  time.Time
	limit  int
}

func newListCmd(f *factory.Factory) *cobra.Command {
	o := &listOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List recorded jobs, newest first",
		Args:  cobra.NoArgs,
		Example: `  schedmate history list
  schedmate history list --user alice --state failed,timeout --since 7d
  schedmate --json history list --limit 0`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flt, err := o.filter()
			if err != nil {
				return exitcode.New(exitcode.Usage, err)
			}
			st, err := openForReading(f)
			if err != nil {
				return err
			}
			jobs, err := selectJobs(st, flt)
			if err != nil {
				return factory.StoreError(err)
			}
			return writeList(f, jobs, "no recorded jobs match", writeTable)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.user, "user", "u", "", "only jobs of this user")
	fl.StringSliceVarP(&o.states, "state", "s", nil, "only jobs that ended in these states (completed, failed, timeout, ...)")
	fl.StringVar(&o.since, "since", "", "only jobs that ended after this: a duration (36h, 7d) or a date (2026-01-31, RFC 3339)")
	fl.IntVarP(&o.limit, "limit", "n", 50, "show at most this many jobs; 0 for all")
	return cmd
}

func (o *listOptions) filter() (filter, error) {
	flt := filter{user: o.user, limit: o.limit}
	if o.limit < 0 {
		return flt, fmt.Errorf("--limit must be 0 or more, not %d", o.limit)
	}
	for _, s := range o.states {
		if s = strings.ToUpper(strings.TrimSpace(s)); s != "" {
			if flt.states == nil {
				flt.states = map[string]bool{}
			}
			flt.states[s] = true
		}
	}
	if o.since != "" {
		t, err := parseSince(o.since, o.now())
		if err != nil {
			return flt, err
		}
		flt.since = t
	}
	return flt, nil
}

// parseSince reads --since: a duration before now (with "d" for days) or
// an absolute date or time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseFloat(days, 64); err == nil && n >= 0 {
			return now.Add(-time.Duration(n * 24 * float64(time.Hour))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration such as 36h or 7d, or a date such as 2026-01-31", s)
}

// when is the time a job is listed by: its end, else start, else submit.
func when(j *store.Job) time.Time {
	for _, t := range []time.Time{j.End, j.Start, j.Submit} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// selectJobs returns the jobs that pass flt, newest first.
func selectJobs(st *store.Store, flt filter) ([]*store.Job, error) {
	jobs := []*store.Job{}
	if st == nil {
		return jobs, nil
	}
	err := st.ForEachJob(func(j *store.Job) error {
		if flt.user != "" && j.User != flt.user ||
			flt.states != nil && !flt.states[j.State] ||
			!flt.since.IsZero() && when(j).Before(flt.since) {
			return nil
		}
		j.Vector = nil // large and of no use in a listing
		jobs = append(jobs, j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(jobs, func(a, b *store.Job) int { return when(b).Compare(when(a)) })
	if flt.limit > 0 && len(jobs) > flt.limit {
		jobs = jobs[:flt.limit]
	}
	return jobs, nil
}

func writeTable(w io.Writer, jobs []*store.Job) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBID\tUSER\tNAME\tPARTITION\tSTATE\tEXIT\tENDED\tELAPSED\tNODES")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d:%d\t%s\t%s\t%s\n",
			j.JobID, orDash(j.User), orDash(truncate(j.Name, 24)), orDash(j.Partition), orDash(j.State),
			j.ExitCode, j.Signal, formatTime(j.End), formatDuration(j.Duration()), orDash(truncate(j.NodeList, 24)))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

// formatDuration prints Slurm's elapsed style: [D-]HH:MM:SS.
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	s := int64(d / time.Second)
	days, s := s/86400, s%86400
	out := fmt.Sprintf("%02d:%02d:%02d", s/3600, s%3600/60, s%60)
	if days > 0 {
		out = fmt.Sprintf("%d-%s", days, out)
	}
	return out
}
