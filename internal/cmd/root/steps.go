package root

import (
	"context"
	"fmt"
	"os/user"
	"strconv"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/cmd/hook"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/fingerprint"
	"github.com/schedmate/schedmate/internal/jobend"
	"github.com/schedmate/schedmate/internal/nodehealth"
	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
)

// hookSteps wires the services that Slurm's hooks run besides recording
// history: the duration estimate at submit, and metrics, indexing,
// diagnosis and recovery at the end of a job.
func hookSteps(f *factory.Factory) hook.Steps {
	return hook.Steps{
		Estimator: func(ctx context.Context, req *hook.SubmitRequest) (*hook.Estimate, error) {
			return estimateSubmission(ctx, f, req)
		},
		Recovery: func(ctx context.Context, job *store.Job) error {
			return endOfJob(ctx, f, job)
		},
		Reestimate: func(ctx context.Context, job *store.Job) (*hook.Estimate, error) {
			return reestimate(ctx, f, job)
		},
	}
}

// reestimate estimates a resubmission of a recorded job from its recorded
// description, which embeds like the submission did.
func reestimate(ctx context.Context, f *factory.Factory, job *store.Job) (*hook.Estimate, error) {
	st, opts, pol, err := advisorDeps(f)
	if err != nil {
		return nil, err
	}
	adv, err := advisor.ForSubmit(ctx, st, advisor.SubmitRequest{Job: advisor.InfoFromJob(job)}, pol, opts)
	if err != nil {
		return nil, err
	}
	return toHookEstimate(adv), nil
}

func toHookEstimate(adv *advisor.SubmitAdvice) *hook.Estimate {
	return &hook.Estimate{
		Record:      &store.EstimateRecord{EstimateS: adv.Estimate.EstimateS, Source: adv.Estimate.Source, Confidence: adv.Estimate.Confidence},
		Fingerprint: adv.FingerprintText, FingerprintHash: adv.FingerprintHash,
		Metadata: adv.Metadata, Comment: adv.Comment, Settings: adv.Settings,
	}
}

// advisorDeps returns the database and the advisor's settings.
func advisorDeps(f *factory.Factory) (*store.Store, advisor.Options, advisor.Policy, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, advisor.Options{}, advisor.Policy{}, err
	}
	st, err := f.Store()
	if err != nil {
		return nil, advisor.Options{}, advisor.Policy{}, err
	}
	opts, pol := advisor.FromConfig(cfg.Advisor)
	return st, opts, pol, nil
}

func estimateSubmission(ctx context.Context, f *factory.Factory, req *hook.SubmitRequest) (*hook.Estimate, error) {
	st, opts, pol, err := advisorDeps(f)
	if err != nil {
		return nil, err
	}
	nodes, _ := strconv.Atoi(req.Nodes)
	job := advisor.JobInfo{
		User: req.User, Partition: req.Partition, Name: req.Name, WorkDir: req.WorkDir,
		GPUs: slurm.ParseGPUs(req.Gres), NumNodes: nodes, TimeLimitS: req.TimeLimit.Seconds(),
	}
	var args []string
	if len(req.Argv) > 1 {
		args = req.Argv[1:]
	}
	adv, err := advisor.ForSubmit(ctx, st, advisor.SubmitRequest{
		Job: job, Script: req.ScriptFile, Args: args, Access: submitterAccess(req.UID),
	}, pol, opts)
	if err != nil {
		return nil, err
	}
	return toHookEstimate(adv), nil
}

// submitterAccess returns the submitting user's ids, so that fingerprinting
// reads only what that user could read. Unknown ids yield nil, which
// fingerprint treats as "check with the process's own rights".
func submitterAccess(uid string) *fingerprint.Access {
	n, err := strconv.Atoi(uid)
	if err != nil || uid == "" {
		return nil
	}
	acc := &fingerprint.Access{UID: n}
	if u, err := user.LookupId(uid); err == nil {
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if id, err := strconv.Atoi(g); err == nil {
					acc.GIDs = append(acc.GIDs, id)
				}
			}
		}
	}
	return acc
}

func endOfJob(ctx context.Context, f *factory.Factory, job *store.Job) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	cluster, err := f.Slurm()
	if err != nil {
		return err
	}
	path, err := f.StorePath()
	if err != nil {
		return err
	}
	_, err = jobend.Run(ctx, jobend.Deps{
		OpenStore: f.Store, ReleaseStore: f.ReleaseStore,
		Cluster: cluster, Config: cfg,
		GPUSpool: spool.New(nodehealth.GPUSpoolDir(cfg.Health, path)),
		DryRun:   cfg.Hooks.DryRun, Log: f.Logger(),
	}, job)
	if err != nil {
		return fmt.Errorf("end of job %s: %w", job.JobID, err)
	}
	return nil
}
