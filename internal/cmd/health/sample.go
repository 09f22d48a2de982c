package health

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/gpu"
	"github.com/schedmate/schedmate/internal/nodehealth"
	"github.com/schedmate/schedmate/internal/spool"
)

// sampleOptions are the inputs of `health sample`.
type sampleOptions struct {
	JobID    string
	Node     string
	Interval time.Duration
	PIDFile  string
}

func newSampleCmd(f *factory.Factory) *cobra.Command {
	opts := &sampleOptions{}
	cmd := &cobra.Command{
		Use:   "sample",
		Short: "Sample a job's GPUs until stopped, then spool the figures",
		Long: `Samples the GPUs of a job (SLURM_STEP_GPUS, SLURM_JOB_GPUS or
CUDA_VISIBLE_DEVICES) through NVML until it receives SIGTERM or SIGINT,
listening for Xid events on them, and then writes the mean SM utilisation,
peak GPU memory and Xids into the GPU spool (health.gpu_spool_dir) for the
controller to merge into the job's history. Start it from the node Prolog
in the background and stop it from the node Epilog. With no GPU it records
nothing and exits 0.`,
		Example: `  # Prolog (node)
  setsid -f schedmate health sample --job "$SLURM_JOB_ID" \
    --pid-file "/run/schedmate-sample.$SLURM_JOB_ID" </dev/null >/dev/null 2>&1
  # Epilog (node)
  kill "$(cat "/run/schedmate-sample.$SLURM_JOB_ID")" 2>/dev/null || true`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSample(cmd, f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.JobID, "job", "", "job id (default $SLURM_JOB_ID)")
	cmd.Flags().StringVar(&opts.Node, "node", "", "node name (default $SLURMD_NODENAME or the host name)")
	cmd.Flags().DurationVar(&opts.Interval, "interval", 0, "time between samples (default health.sample_interval)")
	cmd.Flags().StringVar(&opts.PIDFile, "pid-file", "", "write the sampler's process id here while it runs (removed on exit)")
	return cmd
}

// gpuSpool returns the spool that carries per-job GPU figures and node
// check results to the controller.
func gpuSpool(f *factory.Factory, cfg *config.Config) (*spool.Spool, error) {
	path := ""
	if cfg.Health.GPUSpoolDir == "" {
		var err error
		if path, err = f.StorePath(); err != nil {
			return nil, err
		}
	}
	return spool.New(nodehealth.GPUSpoolDir(cfg.Health, path)), nil
}

func runSample(cmd *cobra.Command, f *factory.Factory, opts *sampleOptions) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	getenv := getenvFrom(f.Environ)
	job := opts.JobID
	if job == "" {
		job = getenv("SLURM_JOB_ID")
	}
	if job == "" {
		return exitcode.Errorf(exitcode.Usage, "no job: pass --job or set SLURM_JOB_ID")
	}
	node, err := nodeName(opts.Node, f.Environ)
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	sp, err := gpuSpool(f, cfg)
	if err != nil {
		return err
	}
	m, err := openGPUs(f, cfg)
	if err != nil {
		return err
	}
	defer m.Shutdown()
	devs, err := m.Devices()
	if errors.Is(err, gpu.ErrUnavailable) {
		f.Logger().Info("no GPU to sample", "job", job, "reason", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("list GPUs: %w", err)
	}
	idx, err := gpu.JobDevices(getenv, devs)
	if errors.Is(err, gpu.ErrNoJobGPUs) {
		f.Logger().Info("job holds no GPU on this node", "job", job)
		return nil
	}
	if err != nil {
		return exitcode.New(exitcode.DataErr, err)
	}
	if opts.PIDFile != "" {
		if err := os.WriteFile(opts.PIDFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return fmt.Errorf("write pid file: %w", err)
		}
		defer os.Remove(opts.PIDFile)
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = cfg.Health.SampleInterval
	}
	// Sample until the Epilog's SIGTERM cancels the command's context.
	fig, err := gpu.Sample(cmd.Context(), m, gpu.SampleOptions{Interval: interval, Devices: idx})
	if err != nil {
		if errors.Is(err, gpu.ErrUnavailable) {
			return nil
		}
		return fmt.Errorf("sample GPUs of job %s: %w", job, err)
	}
	return nodehealth.WriteJobGPU(sp, nodehealth.JobGPURecord{JobID: job, Node: node, Figures: fig})
}

func newIngestCmd(f *factory.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "ingest",
		Short: "Apply the records nodes left in the health spool to the history",
		Long: `Applies every record that nodes left in the health spool
(health.gpu_spool_dir), whichever job or check wrote it: evidence and audit
entries of node checks go into the history as they are; per-job GPU figures
give each job's entry its mean SM utilisation, peak GPU memory and Xids, and
Xids that call for a drain are recorded as evidence against the node.
Records of unknown kinds or that cannot be decoded are set aside.
EpilogSlurmctld runs the same step.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			sp, err := gpuSpool(f, cfg)
			if err != nil {
				return err
			}
			st, err := f.Store()
			if err != nil {
				return factory.StoreError(err)
			}
			res, err := nodehealth.IngestSpool(sp, st)
			if f.JSON {
				if werr := writeJSON(f.IO.Out, res); werr != nil {
					return werr
				}
			} else {
				fmt.Fprintf(f.IO.Out, "applied %d, set aside %d\n", res.Applied, res.SetAside)
			}
			if err != nil {
				return fmt.Errorf("ingest health spool %s: %w", sp.Dir(), err)
			}
			return nil
		},
	}
}
