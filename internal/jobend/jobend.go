// Package jobend runs what schedmate does once a job's end is recorded: it
// merges the GPU figures the nodes sent, reads the final training metrics
// from the log, adds the job to the advisor's retrieval index and, for a
// failed job, diagnoses the log and carries out the recovery policy
// (comment, bounded requeue away from a suspect node, drain on trusted
// evidence only). Every step is bounded and a failing step never stops the
// others.
package jobend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/failure"
	"github.com/schedmate/schedmate/internal/metrics"
	"github.com/schedmate/schedmate/internal/nodehealth"
	"github.com/schedmate/schedmate/internal/recovery"
	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
)

// evidenceWindow is how far before a job's start node evidence still counts
// as corroboration.
const evidenceWindow = 24 * time.Hour

// Deps are what the end-of-job steps use.
type Deps struct {
	// OpenStore opens (or returns the open) history database; ReleaseStore
	// closes it. The steps hold the database only in short phases and
	// never while they call Slurm, because many epilogs share its lock.
	OpenStore    func() (*store.Store, error)
	ReleaseStore func()
	Cluster      slurm.Client
	Config       *config.Config
	// GPUSpool carries per-job GPU figures from the nodes; nil skips them.
	GPUSpool *spool.Spool
	// DryRun audits recovery actions without carrying them out.
	DryRun bool
	Log    *slog.Logger
	Now    func() time.Time
}

// Outcome is what the steps found and decided.
type Outcome struct {
	Metrics   *store.FinalMetrics `json:"metrics,omitempty"`
	Diagnosis *store.Diagnosis    `json:"diagnosis,omitempty"`
	Plan      recovery.Plan       `json:"plan"`
}

// Run carries out the end-of-job steps for job, which must already be
// recorded in the store. It returns the joined errors of the steps that
// failed; the others still ran.
func Run(ctx context.Context, d Deps, job *store.Job) (*Outcome, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	out := &Outcome{}
	out.Metrics = finalMetrics(d, job)
	var evidence map[string][]store.Evidence
	failed := needsDiagnosis(job.State)
	errs := d.withStore(func(st *store.Store) []error {
		var errs []error
		if d.GPUSpool != nil {
			if _, err := nodehealth.IngestSpool(d.GPUSpool, st); err != nil {
				errs = append(errs, fmt.Errorf("ingest GPU figures: %w", err))
			}
		}
		if updated, err := st.GetJob(job.JobID); err == nil {
			job = updated
		}
		if out.Metrics != nil {
			job.Metrics = out.Metrics
			if err := st.UpdateJob(job.JobID, func(j *store.Job) error { j.Metrics = out.Metrics; return nil }); err != nil {
				errs = append(errs, fmt.Errorf("record final metrics: %w", err))
			}
		}
		if err := advisor.IndexJobs(st, job); err != nil {
			errs = append(errs, fmt.Errorf("index job for estimates: %w", err))
		}
		if failed {
			evidence = nodeEvidence(st, job)
		}
		return errs
	})
	if failed && ctx.Err() == nil {
		out.Diagnosis = diagnose(d, job)
		if out.Diagnosis != nil {
			plan, err := recover(ctx, d, job, out.Diagnosis, evidence)
			out.Plan = plan
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return out, errors.Join(errs...)
}

// withStore runs fn with the database open and releases it afterwards.
func (d Deps) withStore(fn func(*store.Store) []error) []error {
	st, err := d.OpenStore()
	if err != nil {
		return []error{fmt.Errorf("open history: %w", err)}
	}
	defer d.ReleaseStore()
	return fn(st)
}

// nodeEvidence reads what the store knows about the job's nodes since
// shortly before it started.
func nodeEvidence(st *store.Store, job *store.Job) map[string][]store.Evidence {
	evidence := map[string][]store.Evidence{}
	since := job.Start.Add(-evidenceWindow)
	for _, n := range job.Nodes {
		if ev, err := st.NodeEvidence(n, since); err == nil {
			evidence[n] = ev
		}
	}
	return evidence
}

// needsDiagnosis reports whether a job in this final state may have a
// failure in its log worth diagnosing.
func needsDiagnosis(state string) bool {
	switch state {
	case "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL":
		return true
	}
	return false
}

// logPaths lists the job's distinct log files, stdout first.
func logPaths(job *store.Job) []string {
	var paths []string
	for _, p := range []string{job.StdOut, job.StdErr} {
		if p != "" && (len(paths) == 0 || paths[0] != p) {
			paths = append(paths, p)
		}
	}
	return paths
}

func finalMetrics(d Deps, job *store.Job) *store.FinalMetrics {
	opts := metrics.Options{ProgressLines: d.Config.Metrics.ProgressLines, SlowdownRatio: d.Config.Metrics.SlowdownRatio, StallSteps: d.Config.Metrics.StallSteps}
	for _, p := range logPaths(job) {
		m, err := metrics.Final(p, opts)
		if err != nil {
			d.Log.Debug("final metrics", "job", job.JobID, "log", p, "err", err)
			continue
		}
		if m != nil {
			return m
		}
	}
	return nil
}

// diagnose returns the most confident failure verdict over the job's logs,
// or a "none" verdict when no log shows a failure; nil when no log could be
// read.
func diagnose(d Deps, job *store.Job) *store.Diagnosis {
	opts := failure.DefaultOptions()
	if d.Config.Failure.ChunkLines > 0 {
		opts.ChunkLines = d.Config.Failure.ChunkLines
	}
	var best *failure.Diagnosis
	for _, p := range logPaths(job) {
		diag, err := failure.DiagnoseFile(p, opts)
		if err != nil {
			d.Log.Info("diagnose", "job", job.JobID, "log", p, "err", err)
			continue
		}
		if best == nil || (diag.Failed() && (!best.Failed() || diag.Confidence > best.Confidence)) {
			best = diag
		}
	}
	if best == nil {
		return nil
	}
	return best.Record()
}

// recover decides and carries out the recovery actions for a diagnosed job.
// Slurm is asked about node states only when the verdict is an
// infrastructure fault, to keep the epilog's calls into Slurm few.
func recover(ctx context.Context, d Deps, job *store.Job, diag *store.Diagnosis, evidence map[string][]store.Evidence) (recovery.Plan, error) {
	in := recovery.Input{Job: job, Diagnosis: diag, Evidence: evidence}
	if diag.Category == string(failure.Infrastructure) {
		if nodes, err := d.Cluster.Nodes(ctx); err == nil {
			in.Nodes, in.PartitionSize, in.PartitionDrained = partitionView(nodes, job.Partition)
		} else {
			d.Log.Info("node states unavailable", "err", err)
		}
	}
	plan := recovery.Decide(in, recovery.PolicyFromConfig(d.Config.Failure))
	if diag.Category == string(failure.Infrastructure) && len(in.Nodes) == 0 {
		plan = withoutDrains(plan, "node states unavailable: no node drained")
	}
	ex := &recovery.Executor{Cluster: clusterAdapter{d.Cluster}, Store: briefRecorder{d}, DryRun: d.DryRun, Actor: "hook epilog", Now: d.Now}
	return plan, ex.Apply(ctx, job, diag, plan)
}

// partitionView returns every node's state, and the size and drained count
// of the job's partition (all nodes when the partition is unknown).
func partitionView(nodes []slurm.Node, partition string) (states []recovery.NodeState, size, drained int) {
	for _, n := range nodes {
		states = append(states, recovery.NodeState{Name: n.Name, State: n.State})
		if partition != "" && !slices.Contains(n.Partitions, partition) {
			continue
		}
		size++
		if n.Drained() && slurm.IsOurs(n.Reason) {
			drained++
		}
	}
	return states, size, drained
}

func withoutDrains(p recovery.Plan, note string) recovery.Plan {
	kept := p.Actions[:0:0]
	dropped := false
	for _, a := range p.Actions {
		if a.Kind == recovery.Drain {
			dropped = true
			continue
		}
		kept = append(kept, a)
	}
	p.Actions = kept
	if dropped {
		p.Notes = append(p.Notes, note)
	}
	return p
}

// briefRecorder gives recovery the store one short open per write, so that
// no lock is held while the executor waits on Slurm.
type briefRecorder struct{ d Deps }

func (r briefRecorder) do(fn func(*store.Store) error) error {
	if errs := r.d.withStore(func(st *store.Store) []error { return []error{fn(st)} }); errs[0] != nil {
		return errs[0]
	}
	return nil
}

// Audit implements recovery.Recorder.
func (r briefRecorder) Audit(e store.AuditEntry) (seq uint64, err error) {
	err = r.do(func(st *store.Store) error { seq, err = st.Audit(e); return err })
	return seq, err
}

// FinishAudit implements recovery.Recorder.
func (r briefRecorder) FinishAudit(seq uint64, result string, actErr error) error {
	return r.do(func(st *store.Store) error { return st.FinishAudit(seq, result, actErr) })
}

// UpdateJob implements recovery.Recorder.
func (r briefRecorder) UpdateJob(id string, fn func(*store.Job) error) error {
	return r.do(func(st *store.Store) error { return st.UpdateJob(id, fn) })
}

// clusterAdapter gives recovery the three Slurm verbs it needs.
type clusterAdapter struct{ c slurm.Client }

// RequeueJob implements recovery.Cluster.
func (a clusterAdapter) RequeueJob(ctx context.Context, id string, exclude []string) error {
	return a.c.Requeue(ctx, id, slurm.RequeueOptions{ExcludeNodes: exclude})
}

// SetJobComment implements recovery.Cluster.
func (a clusterAdapter) SetJobComment(ctx context.Context, id, comment string) error {
	return a.c.SetComment(ctx, id, comment, false)
}

// DrainNode implements recovery.Cluster.
func (a clusterAdapter) DrainNode(ctx context.Context, name, reason string) error {
	return a.c.DrainNode(ctx, name, reason)
}
