package recovery

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/store"
)

// Cluster is the part of Slurm the executor acts on.
type Cluster interface {
	RequeueJob(ctx context.Context, id string, exclude []string) error
	SetJobComment(ctx context.Context, id, comment string) error
	DrainNode(ctx context.Context, name, reason string) error
}

// Recorder is the part of the store the executor writes to.
type Recorder interface {
	Audit(e store.AuditEntry) (uint64, error)
	FinishAudit(seq uint64, result string, actErr error) error
	UpdateJob(id string, fn func(*store.Job) error) error
}

// Executor applies plans. In DryRun mode it records what it would do and
// does nothing else.
type Executor struct {
	Cluster Cluster
	Store   Recorder
	DryRun  bool
	// Actor names who acts in the audit log, e.g. "epilog".
	Actor string
	Now   func() time.Time
}

// Apply records the diagnosis on the job and carries out the plan's actions
// in order. Every action is audited before it is attempted; a failed action
// does not stop the ones after it. The returned error joins all failures.
func (e *Executor) Apply(ctx context.Context, job *store.Job, diag *store.Diagnosis, plan Plan) error {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	var errs []string
	if !e.DryRun && diag != nil {
		if err := e.Store.UpdateJob(job.JobID, func(j *store.Job) error {
			j.Diagnosis = diag
			return nil
		}); err != nil {
			errs = append(errs, fmt.Sprintf("record diagnosis of job %s: %v", job.JobID, err))
		}
	}
	for _, a := range plan.Actions {
		entry := store.AuditEntry{Time: now(), Actor: e.Actor, Action: string(a.Kind), Target: a.Target,
			Reason: a.Text, DryRun: e.DryRun, Details: map[string]string{"job": job.JobID}}
		if len(a.Exclude) > 0 {
			entry.Details["exclude"] = strings.Join(a.Exclude, ",")
		}
		if diag != nil {
			entry.Details["category"] = diag.Category
			entry.Details["confidence"] = fmt.Sprintf("%.2f", diag.Confidence)
		}
		seq, err := e.Store.Audit(entry)
		if err != nil {
			// no record, no action
			errs = append(errs, fmt.Sprintf("audit %s %s: %v", a.Kind, a.Target, err))
			continue
		}
		if e.DryRun {
			if err := e.Store.FinishAudit(seq, "dry-run", nil); err != nil {
				errs = append(errs, fmt.Sprintf("finish audit %d: %v", seq, err))
			}
			continue
		}
		actErr := e.act(ctx, a)
		result := "ok"
		if actErr != nil {
			result = "failed"
			errs = append(errs, fmt.Sprintf("%s %s: %v", a.Kind, a.Target, actErr))
		}
		if err := e.Store.FinishAudit(seq, result, actErr); err != nil {
			errs = append(errs, fmt.Sprintf("finish audit %d: %v", seq, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("recovery of job %s: %s", job.JobID, strings.Join(errs, "; "))
	}
	return nil
}

func (e *Executor) act(ctx context.Context, a Action) error {
	switch a.Kind {
	case Requeue:
		if err := e.Cluster.RequeueJob(ctx, a.Target, a.Exclude); err != nil {
			return err
		}
		return e.Store.UpdateJob(a.Target, func(j *store.Job) error {
			j.RequeueCount++
			return nil
		})
	case Comment:
		return e.Cluster.SetJobComment(ctx, a.Target, a.Text)
	case Drain:
		return e.Cluster.DrainNode(ctx, a.Target, a.Text)
	default:
		return fmt.Errorf("unknown action %q", a.Kind)
	}
}
