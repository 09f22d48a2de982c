// Package nodehealth turns node checks (NVML, nccl-tests) into evidence and
// into drain and resume decisions, and applies them safely: every action is
// audited before it is taken, every action has a dry run, a node is drained
// only on a trusted failure (never because a check itself broke, unless
// configured), and only drains that schedmate made for the same check are
// ever undone.
package nodehealth

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/store"
)

// Status is the health verdict for one node from one source.
type Status string

// The verdicts.
const (
	// StatusPass means the check ran and found nothing wrong.
	StatusPass Status = "pass"
	// StatusFail means the check ran and found a fault of the node.
	StatusFail Status = "fail"
	// StatusCheckError means the check itself broke (missing tool, hang,
	// crash, misconfigured launch): it says nothing about the node.
	StatusCheckError Status = "check_error"
	// StatusUnavailable means there is nothing to check (no GPU, no
	// driver): not a fault.
	StatusUnavailable Status = "unavailable"
	// StatusNotTested means the check could not start because other jobs
	// hold the node (nodes busy): nothing is known, nothing broke.
	StatusNotTested Status = "not_tested"
)

// Sources of outcomes; they are also the components named in drain reasons,
// so that a passing check only undoes drains of its own kind.
const (
	SourceNVML = "nvml"
	SourceNCCL = "nccl"
)

// Outcome is one node's verdict from one source.
type Outcome struct {
	Node   string `json:"node"`
	Source string `json:"source"`
	Status Status `json:"status"`
	// Check names the failing check ("ecc", "low-bandwidth", ...), or the
	// source's overall check when nothing failed.
	Check string `json:"check"`
	// Detail is a one-line explanation, used as the drain reason detail.
	Detail string `json:"detail"`
	// Details are extra figures kept with the evidence.
	Details map[string]string `json:"details,omitempty"`
	// JobID links the outcome to a job, when a job's failure led to it.
	JobID string `json:"job_id,omitempty"`
}

// NodeStatus is what Slurm says about a node.
type NodeStatus struct {
	// State is Slurm's state string ("IDLE", "MIXED+DRAIN", "DRAINED", ...).
	State string
	// Reason is the node's reason string, empty when none.
	Reason string
}

// Drained reports whether the node is draining or drained.
func (n NodeStatus) Drained() bool {
	return strings.Contains(strings.ToUpper(n.State), "DRAIN")
}

// Cluster is the part of Slurm the policy acts on.
type Cluster interface {
	// NodeStatus returns the node's state and reason.
	NodeStatus(ctx context.Context, name string) (NodeStatus, error)
	// DrainNode drains the node with reason.
	DrainNode(ctx context.Context, name, reason string) error
	// ResumeNode returns the node to service.
	ResumeNode(ctx context.Context, name string) error
}

// Recorder is the part of the store the policy writes to.
type Recorder interface {
	AddEvidence(e store.Evidence) error
	Audit(e store.AuditEntry) (uint64, error)
	FinishAudit(seq uint64, result string, actErr error) error
}

// Action is what the policy does to a node.
type Action string

// The actions.
const (
	ActionNone   Action = "none"
	ActionDrain  Action = "drain"
	ActionResume Action = "resume"
)

// Decision is the policy's choice for one outcome and what came of it.
type Decision struct {
	Node   string `json:"node"`
	Source string `json:"source"`
	Status Status `json:"status"`
	Action Action `json:"action"`
	// Reason is the Slurm reason set on drain.
	Reason string `json:"reason,omitempty"`
	// Note explains why nothing was done, when nothing was.
	Note   string `json:"note,omitempty"`
	DryRun bool   `json:"dry_run,omitempty"`
	// Err is the error of a failed action.
	Err string `json:"error,omitempty"`
}

// Policy records outcomes and drains or resumes nodes.
type Policy struct {
	Cluster Cluster
	Store   Recorder
	// DryRun records evidence and audit entries but changes no node.
	DryRun bool
	// DrainOnCheckError drains nodes whose check broke.
	DrainOnCheckError bool
	// Actor names who acts in the audit log ("health check", "health nccl").
	Actor string
	// FormatReason builds a Slurm reason from a component and a detail
	// (slurm.Reason: "schedmate: component: detail").
	FormatReason func(component, detail string) string
	// IsOurs reports whether a Slurm reason was written by schedmate
	// (slurm.IsOurs).
	IsOurs func(reason string) bool
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// ErrNoCluster reports a policy asked to act without Slurm.
var ErrNoCluster = errors.New("no Slurm client to act on nodes")

// Apply records every outcome as evidence and then drains failing nodes
// and resumes passing nodes that schedmate drained for the same source. It
// returns one decision per outcome; the error joins the failures to record
// or act, and a failure on one node does not stop the others.
func (p *Policy) Apply(ctx context.Context, outcomes []Outcome) ([]Decision, error) {
	var errs []error
	decisions := make([]Decision, 0, len(outcomes))
	for _, o := range outcomes {
		if err := p.record(o); err != nil {
			errs = append(errs, err)
		}
		d, err := p.decide(ctx, o)
		if err != nil {
			d.Err = err.Error()
			errs = append(errs, err)
		}
		decisions = append(decisions, d)
	}
	return decisions, errors.Join(errs...)
}

func (p *Policy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Policy) record(o Outcome) error {
	if p.Store == nil {
		return nil
	}
	details := map[string]string{"status": string(o.Status)}
	for k, v := range o.Details {
		details[k] = v
	}
	e := store.Evidence{
		Node: o.Node, Time: p.now(), Source: o.Source, Check: o.Check,
		OK:      o.Status != StatusFail,
		Trusted: o.Status == StatusPass || o.Status == StatusFail,
		Summary: o.Detail, JobID: o.JobID, Details: details,
	}
	if err := p.Store.AddEvidence(e); err != nil {
		return fmt.Errorf("record %s evidence for %s: %w", o.Source, o.Node, err)
	}
	return nil
}

func (p *Policy) decide(ctx context.Context, o Outcome) (Decision, error) {
	d := Decision{Node: o.Node, Source: o.Source, Status: o.Status, Action: ActionNone, DryRun: p.DryRun}
	wantDrain := o.Status == StatusFail || (o.Status == StatusCheckError && p.DrainOnCheckError)
	if !wantDrain && o.Status != StatusPass {
		d.Note = fmt.Sprintf("%s: not a node fault, nothing to do", o.Status)
		return d, nil
	}
	if p.Cluster == nil {
		d.Note = "no Slurm client"
		if wantDrain {
			return d, ErrNoCluster
		}
		return d, nil
	}
	st, err := p.Cluster.NodeStatus(ctx, o.Node)
	if err != nil {
		return d, fmt.Errorf("node %s: %w", o.Node, err)
	}
	ours := p.IsOurs != nil && p.IsOurs(st.Reason)
	switch {
	case wantDrain && st.Drained() && !ours:
		d.Note = fmt.Sprintf("already drained by someone else (%q); left alone", st.Reason)
		return d, nil
	case wantDrain && st.Drained():
		d.Note = fmt.Sprintf("already drained by schedmate (%q)", st.Reason)
		return d, nil
	case wantDrain:
		d.Action = ActionDrain
		d.Reason = p.reason(o)
		return d, p.act(ctx, d, o, func() error { return p.Cluster.DrainNode(ctx, o.Node, d.Reason) })
	case st.Drained() && ours && reasonComponent(st.Reason) == o.Source:
		d.Action = ActionResume
		d.Reason = st.Reason
		return d, p.act(ctx, d, o, func() error { return p.Cluster.ResumeNode(ctx, o.Node) })
	case st.Drained() && ours:
		d.Note = fmt.Sprintf("drained by schedmate for another check (%q); a %s pass does not clear it", st.Reason, o.Source)
	case st.Drained():
		d.Note = fmt.Sprintf("drained by someone else (%q); left alone", st.Reason)
	}
	return d, nil
}

// reasonComponent returns the component of a "schedmate: component: detail"
// reason.
func reasonComponent(reason string) string {
	parts := strings.SplitN(reason, ":", 3)
	if len(parts) < 3 {
		return ""
	}
	return strings.TrimSpace(parts[1])
}

func (p *Policy) reason(o Outcome) string {
	detail := o.Detail
	if o.Status == StatusCheckError {
		detail = "check error: " + detail
	}
	if p.FormatReason == nil {
		return "schedmate: " + o.Source + ": " + detail
	}
	return p.FormatReason(o.Source, detail)
}

// act audits the action, carries it out unless in dry-run mode, and
// records the result.
func (p *Policy) act(_ context.Context, d Decision, o Outcome, do func() error) error {
	var seq uint64
	if p.Store != nil {
		var err error
		seq, err = p.Store.Audit(store.AuditEntry{
			Time: p.now(), Actor: p.Actor, Action: "node." + string(d.Action), Target: d.Node,
			Reason: d.Reason, DryRun: p.DryRun,
			Details: map[string]string{"source": o.Source, "check": o.Check, "status": string(o.Status)},
		})
		if err != nil {
			// Never act without an audit record.
			return fmt.Errorf("audit %s of %s: %w", d.Action, d.Node, err)
		}
	}
	if p.DryRun {
		return p.finish(seq, "dry-run", nil)
	}
	actErr := do()
	result := "done"
	if actErr != nil {
		result = "failed"
		actErr = fmt.Errorf("%s node %s: %w", d.Action, d.Node, actErr)
	}
	return errors.Join(actErr, p.finish(seq, result, actErr))
}

func (p *Policy) finish(seq uint64, result string, actErr error) error {
	if p.Store == nil {
		return nil
	}
	if err := p.Store.FinishAudit(seq, result, actErr); err != nil {
		return fmt.Errorf("finish audit %d: %w", seq, err)
	}
	return nil
}

// Summarize counts decisions by status and by action, for a one-line report.
func Summarize(ds []Decision) string {
	counts := map[string]int{}
	for _, d := range ds {
		counts[string(d.Status)]++
		if d.Action != ActionNone {
			counts[string(d.Action)]++
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}
