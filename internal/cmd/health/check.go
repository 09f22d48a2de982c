package health

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/gpu"
	"github.com/schedmate/schedmate/internal/nodehealth"
)

// checkOptions are the inputs of `health check`.
type checkOptions struct {
	Node         string
	DryRun       bool
	ExpectedGPUs int
	XidWait      time.Duration
	NoAct        bool
}

func newCheckCmd(f *factory.Factory) *cobra.Command {
	opts := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Run the fast NVML checks on this node (Slurm HealthCheckProgram)",
		Long: `Checks every GPU of this node through NVML: GPU count, uncorrectable ECC
errors, pending or failed row remapping (retired pages on older GPUs),
NVLink state and error counters, temperature and throttling, PCIe link
width, and Xid events within --xid-wait. It records the result as evidence,
drains the node when a check fails and resumes it when schedmate drained it
for an earlier NVML failure. On a node that cannot open the database (it
lives on the controller, or is busy for more than half a second) the
evidence and audit entries go into the health spool (health.gpu_spool_dir,
shared with the controller), which "schedmate health ingest" and the
controller's epilog apply. A node without GPU or driver is reported as
"unavailable", which is not a failure and never drains, even when Slurm's
gres says the node has GPUs.

Exit status: 0 healthy or unavailable, 8 a check failed.`,
		Example: `  # slurm.conf
  HealthCheckProgram=/usr/bin/schedmate health check
  HealthCheckInterval=300`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCheck(cmd, f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Node, "node", "", "node name (default $SLURMD_NODENAME or the host name)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "record and report, but drain or resume nothing")
	cmd.Flags().BoolVar(&opts.NoAct, "no-act", false, "only print the checks: record nothing, contact no Slurm")
	cmd.Flags().IntVar(&opts.ExpectedGPUs, "expected-gpus", -1, "GPUs the node should have (default health.expected_gpus, else Slurm's gres count)")
	cmd.Flags().DurationVar(&opts.XidWait, "xid-wait", -1, "how long to listen for Xid events (default health.xid_wait)")
	return cmd
}

// checkLockWait bounds how long `health check` waits for the database lock
// before recording into the spool: Slurm's health check must stay fast.
const checkLockWait = 500 * time.Millisecond

// checkRecorder returns where `health check` records: the database when it
// exists here and opens within checkLockWait, else the health spool, which
// the controller ingests. A compute node never creates a database.
func checkRecorder(f *factory.Factory, cfg *config.Config, node string) (nodehealth.Recorder, error) {
	path, err := f.StorePath()
	if err != nil {
		return nil, err
	}
	if _, statErr := os.Stat(path); statErr == nil {
		if cfg.Store.LockTimeout <= 0 || cfg.Store.LockTimeout > checkLockWait {
			cfg.Store.LockTimeout = checkLockWait
		}
		st, err := f.Store()
		if err == nil {
			return st, nil
		}
		f.Logger().Info("database unavailable; recording into the health spool", "db", path, "err", err)
	}
	sp, err := gpuSpool(f, cfg)
	if err != nil {
		return nil, err
	}
	return nodehealth.NewSpoolRecorder(sp, node), nil
}

func runCheck(cmd *cobra.Command, f *factory.Factory, opts *checkOptions) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	node, err := nodeName(opts.Node, f.Environ)
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	copts := gpu.CheckOptions{ExpectedGPUs: cfg.Health.ExpectedGPUs, XidWait: cfg.Health.XidWait, MaxTempC: cfg.Health.MaxTemperatureC}
	if opts.ExpectedGPUs >= 0 {
		copts.ExpectedGPUs = opts.ExpectedGPUs
	}
	if opts.XidWait >= 0 {
		copts.XidWait = opts.XidWait
	}
	if copts.ExpectedGPUs == 0 && !opts.NoAct {
		// health.expected_gpus 0 means: what Slurm's gres says this node has.
		if c, err := f.Slurm(); err == nil {
			if n, err := c.Node(cmd.Context(), node); err == nil {
				copts.ExpectedGPUs = n.GPUs
			}
		}
	}
	m, err := openGPUs(f, cfg)
	if err != nil {
		return err
	}
	defer m.Shutdown()
	report := gpu.Check(cmd.Context(), m, copts)
	outcome := nodehealth.FromGPUReport(node, report)

	// The result is printed even when it cannot be recorded or acted on.
	var decisions []nodehealth.Decision
	var actErr error
	if !opts.NoAct {
		rec, err := checkRecorder(f, cfg, node)
		if err == nil {
			var p *nodehealth.Policy
			if p, err = policyWith(f, cfg, rec, "health check", opts.DryRun); err == nil {
				decisions, err = p.Apply(cmd.Context(), []nodehealth.Outcome{outcome})
			}
		}
		actErr = err
	}
	out := f.IO.Out
	if f.JSON {
		if err := writeJSON(out, struct {
			Node      string                `json:"node"`
			Status    nodehealth.Status     `json:"status"`
			Report    gpu.Report            `json:"report"`
			Decisions []nodehealth.Decision `json:"decisions,omitempty"`
		}{node, outcome.Status, report, decisions}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%s: %s: %s\n", node, outcome.Status, outcome.Detail)
		for _, fd := range report.Findings {
			if fd.Severity == gpu.SevOK {
				continue
			}
			where := "node"
			if fd.GPU >= 0 {
				where = fmt.Sprintf("GPU %d", fd.GPU)
			}
			fmt.Fprintf(out, "  %-5s %-7s %-13s %s\n", fd.Severity, where, fd.Check, fd.Detail)
		}
		printDecisions(out, decisions)
	}
	if actErr != nil {
		return fmt.Errorf("record or act on the check: %w", actErr)
	}
	if outcome.Status == nodehealth.StatusFail {
		return exitcode.New(exitcode.CheckFailed, errors.New(outcome.Detail))
	}
	return nil
}
