package health

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/nccltest"
	"github.com/schedmate/schedmate/internal/nodehealth"
	"github.com/schedmate/schedmate/slurm"
	"github.com/schedmate/schedmate/slurm/hostlist"
)

// ncclOptions are the inputs of `health nccl`.
type ncclOptions struct {
	Nodes   string
	Node    string
	GPUs    int
	Timeout time.Duration
	DryRun  bool
	// IncludeDrained tests drained and down nodes too, for launchers that
	// bypass Slurm's scheduling (mpirun over ssh).
	IncludeDrained bool
}

func newNCCLCmd(f *factory.Factory) *cobra.Command {
	opts := &ncclOptions{}
	cmd := &cobra.Command{
		Use:   "nccl",
		Short: "Run nccl-tests on nodes, bisect failures, drain and resume",
		Long: `Runs nccl-tests (health.nccl_command on this node, or
health.nccl_nodes_command through srun for --nodes) and judges the output:
failure markers and corrupted data fail; bus bandwidth on messages of 1 GiB
and more is compared with the threshold for the GPU model or node feature.
When a multi-node run fails, the node set is split in halves and retested
until the faulty nodes are found; only those are drained. A missing,
hanging, crashing or garbage-printing nccl-tests is a "check_error": the
nodes are reported, not drained (unless health.drain_on_check_error).

Slurm runs no step on a drained or down node, so such nodes in --nodes are
skipped and reported, never touched. Retest a drained node on the node
itself ("schedmate health nccl" without --nodes, from cron or the node's
health check), or pass --include-drained when health.nccl_nodes_command
reaches nodes without Slurm (mpirun over ssh).

Other jobs' nodes are not waited for: srun --immediate (in the default
health.nccl_nodes_command; add it to your own) gives up at once and the
nodes are reported "not tested (nodes busy)", neither passed nor failed.

Exit status: 0 all passed, 8 a node failed, 4 the check itself broke or
nodes were busy (not tested).`,
		Example: `  schedmate health nccl
  schedmate health nccl --nodes 'gpu[001-008]' --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runNCCL(cmd, f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Nodes, "nodes", "w", "", "nodes to test, a Slurm host list (default: this node, without srun)")
	cmd.Flags().StringVar(&opts.Node, "node", "", "name of this node for a local run (default $SLURMD_NODENAME or the host name)")
	cmd.Flags().IntVar(&opts.GPUs, "gpus", 0, "GPUs per node (default health.expected_gpus)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 0, "limit for one nccl-tests run (default health.nccl_timeout)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "record and report, but drain or resume nothing")
	cmd.Flags().BoolVar(&opts.IncludeDrained, "include-drained", false, "test drained and down nodes in --nodes too (launchers that bypass Slurm)")
	return cmd
}

// tester builds the nccl-tests runner from the configuration.
func tester(f *factory.Factory, cfg *config.Config, gpus int, timeout time.Duration) *nccltest.Tester {
	t := &nccltest.Tester{
		Runner:       f.Runner,
		LocalCommand: strings.Fields(cfg.Health.NCCLCommand),
		NodesCommand: strings.Fields(cfg.Health.NCCLNodesCommand),
		GPUsPerNode:  cfg.Health.ExpectedGPUs,
		Timeout:      cfg.Health.NCCLTimeout,
		Thresholds:   thresholds(cfg.Health),
		Statistic:    nccltest.Statistic(cfg.Health.BusBWStatistic),
	}
	if len(t.LocalCommand) == 0 {
		t.LocalCommand = nil
	}
	if len(t.NodesCommand) == 0 {
		t.NodesCommand = nil
	}
	if gpus > 0 {
		t.GPUsPerNode = gpus
	}
	if timeout > 0 {
		t.Timeout = timeout
	}
	return t
}

func runNCCL(cmd *cobra.Command, f *factory.Factory, opts *ncclOptions) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	if s := cfg.Health.BusBWStatistic; s != "" && s != string(nccltest.StatMax) && s != string(nccltest.StatMedian) {
		return exitcode.Errorf(exitcode.Usage, "health.busbw_statistic %q: want max or median", s)
	}
	var nodes []string
	if opts.Nodes != "" {
		if nodes, err = hostlist.Expand(opts.Nodes); err != nil {
			return exitcode.New(exitcode.Usage, fmt.Errorf("--nodes %q: %w", opts.Nodes, err))
		}
	}
	local, err := nodeName(opts.Node, f.Environ)
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	p, err := newPolicy(f, cfg, "health nccl", opts.DryRun)
	if err != nil {
		return err
	}
	var skipped []skippedNode
	if len(nodes) > 0 && !opts.IncludeDrained {
		nodes, skipped = schedulable(cmd, f, nodes)
		printSkipped(f, skipped)
		if len(nodes) == 0 {
			return exitcode.Errorf(exitcode.Unavailable, "no node of --nodes %q can run a step", opts.Nodes)
		}
	}
	t := tester(f, cfg, opts.GPUs, opts.Timeout)
	if len(nodes) > 0 {
		if n, err := slurmNode(cmd, f, nodes[0]); err == nil {
			t.Features = n.Features
			if t.GPUsPerNode == 0 {
				t.GPUsPerNode = n.GPUs
			}
		}
	} else if t.GPUsPerNode == 0 {
		t.GPUsPerNode = localGPUs(f, cfg)
	}
	run := nodehealth.CheckNCCL(cmd.Context(), t, local, nodes)
	decisions, actErr := p.Apply(cmd.Context(), run.Outcomes)
	out := f.IO.Out
	if f.JSON {
		if err := writeJSON(out, struct {
			nodehealth.NCCLRun
			Skipped   []skippedNode         `json:"skipped,omitempty"`
			Decisions []nodehealth.Decision `json:"decisions"`
		}{run, skipped, decisions}); err != nil {
			return err
		}
	} else {
		v := run.First.Verdict
		fmt.Fprintf(out, "%s: %s\n", strings.Join(run.First.Argv, " "), v.Status)
		for _, r := range v.Reasons {
			fmt.Fprintf(out, "  %s\n", r)
		}
		if b := run.Bisection; b != nil {
			fmt.Fprintf(out, "bisection: %d rounds, %d runs; bad %v", b.Rounds, len(b.Trials), b.Bad)
			if len(b.Suspects) > 0 {
				fmt.Fprintf(out, ", suspects %v", b.Suspects)
			}
			fmt.Fprintln(out)
			if b.Note != "" {
				fmt.Fprintf(out, "  %s\n", b.Note)
			}
		}
		printDecisions(out, decisions)
	}
	if actErr != nil {
		return fmt.Errorf("apply health policy: %w", actErr)
	}
	return ncclExit(run.Outcomes)
}

// skippedNode is a node left out of a run because Slurm runs no step there.
type skippedNode struct {
	Node   string `json:"node"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// schedulable splits nodes into those Slurm can run a step on and those it
// cannot (drained, down, failed). When Slurm cannot be asked, every node
// is kept and the run itself tells.
func schedulable(cmd *cobra.Command, f *factory.Factory, nodes []string) ([]string, []skippedNode) {
	c, err := f.Slurm()
	if err != nil {
		return nodes, nil
	}
	all, err := c.Nodes(cmd.Context())
	if err != nil {
		f.Logger().Warn("cannot read node states; testing every node", "err", err)
		return nodes, nil
	}
	byName := make(map[string]slurm.Node, len(all))
	for _, n := range all {
		byName[n.Name] = n
	}
	var keep []string
	var skipped []skippedNode
	for _, name := range nodes {
		n, ok := byName[name]
		state := strings.ToUpper(n.State)
		if ok && (strings.Contains(state, "DRAIN") || strings.Contains(state, "DOWN") || strings.Contains(state, "FAIL")) {
			skipped = append(skipped, skippedNode{Node: name, State: n.State, Reason: n.Reason})
			continue
		}
		keep = append(keep, name)
	}
	return keep, skipped
}

// printSkipped reports skipped nodes on stderr, so that JSON output stays
// one value.
func printSkipped(f *factory.Factory, skipped []skippedNode) {
	for _, s := range skipped {
		fmt.Fprintf(f.IO.ErrOut, "skipped %s: %s (%q): Slurm runs no step there; test it on the node itself\n", s.Node, s.State, s.Reason)
	}
}

// slurmNode returns what Slurm knows of a node: its features pick the
// bandwidth threshold and its GPU count the test size.
func slurmNode(cmd *cobra.Command, f *factory.Factory, name string) (*slurm.Node, error) {
	c, err := f.Slurm()
	if err != nil {
		return nil, err
	}
	return c.Node(cmd.Context(), name)
}

// localGPUs counts this node's GPUs through NVML; 0 when unavailable.
func localGPUs(f *factory.Factory, cfg *config.Config) int {
	m, err := openGPUs(f, cfg)
	if err != nil {
		return 0
	}
	defer m.Shutdown()
	devs, err := m.Devices()
	if err != nil {
		return 0
	}
	return len(devs)
}

func ncclExit(outcomes []nodehealth.Outcome) error {
	var failed, broken, busy []string
	for _, o := range outcomes {
		switch o.Status {
		case nodehealth.StatusFail:
			failed = append(failed, o.Node)
		case nodehealth.StatusCheckError:
			broken = append(broken, o.Node)
		case nodehealth.StatusNotTested:
			busy = append(busy, o.Node)
		}
	}
	switch {
	case len(failed) > 0:
		return exitcode.New(exitcode.CheckFailed, fmt.Errorf("nccl-tests failed on %s", strings.Join(failed, ",")))
	case len(broken) > 0:
		return exitcode.New(exitcode.Unavailable, errors.New("nccl-tests check could not judge "+strings.Join(broken, ",")))
	case len(busy) > 0:
		return exitcode.New(exitcode.Unavailable, errors.New("not tested (nodes busy): "+strings.Join(busy, ",")))
	}
	return nil
}
