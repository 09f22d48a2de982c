package health

import (
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
)

// nodeHealth is one row of `health status`.
type nodeHealth struct {
	Node   string `json:"node"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// DrainedBySchedmate is set when the node's reason is schedmate's.
	DrainedBySchedmate bool `json:"drained_by_schedmate"`
	// Last holds the newest evidence per source ("nvml", "nccl", "xid").
	Last map[string]store.Evidence `json:"last,omitempty"`
}

func newStatusCmd(f *factory.Factory) *cobra.Command {
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show nodes, their last checks and schedmate's drains",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.Slurm()
			if err != nil {
				return err
			}
			nodes, err := c.Nodes(cmd.Context())
			if err != nil {
				return fmt.Errorf("list nodes: %w", err)
			}
			st, err := f.StoreReadOnly()
			if err != nil {
				return factory.StoreError(err)
			}
			rows, err := collectStatus(nodes, st, time.Now().Add(-since))
			if err != nil {
				return err
			}
			if f.JSON {
				return writeJSON(f.IO.Out, rows)
			}
			for _, r := range rows {
				mark := ""
				if r.DrainedBySchedmate {
					mark = "*"
				}
				fmt.Fprintf(f.IO.Out, "%-16s %-14s%1s", r.Node, r.State, mark)
				for _, src := range []string{"nvml", "nccl", "xid"} {
					if e, ok := r.Last[src]; ok {
						verdict := "ok"
						if !e.OK {
							verdict = "FAIL"
						}
						fmt.Fprintf(f.IO.Out, " %s:%s(%s)", src, verdict, e.Time.Format("01-02 15:04"))
					}
				}
				if r.Reason != "" {
					fmt.Fprintf(f.IO.Out, " %q", r.Reason)
				}
				fmt.Fprintln(f.IO.Out)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&since, "since", 7*24*time.Hour, "how far back to look for checks")
	return cmd
}

func collectStatus(nodes []slurm.Node, st *store.Store, since time.Time) ([]nodeHealth, error) {
	rows := make([]nodeHealth, 0, len(nodes))
	for _, n := range nodes {
		row := nodeHealth{Node: n.Name, State: n.State, Reason: n.Reason, DrainedBySchedmate: slurm.IsOurs(n.Reason), Last: map[string]store.Evidence{}}
		ev, err := st.NodeEvidence(n.Name, since)
		if err != nil {
			return nil, err
		}
		for _, e := range ev {
			row.Last[e.Source] = e
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Node < rows[j].Node })
	return rows, nil
}
