// Package recovery decides and carries out what schedmate does after a job
// fails: requeue infrastructure failures away from the suspect node, hand
// nodes with trusted fault evidence to draining within a per-partition
// limit, and tell the user about script and framework failures through the
// job's comment. Decide is pure; Executor applies a plan, writing every
// action to the audit log before it acts.
package recovery

import (
	"fmt"
	"math"
	"strings"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
)

// Policy bounds what recovery may do.
type Policy struct {
	// MinConfidence is the least diagnosis confidence that requeues.
	MinConfidence float64
	// MaxRequeues bounds automatic requeues per job.
	MaxRequeues int
	// MaxDrainFraction caps the share of a partition that may be drained;
	// at least one node may always be drained.
	MaxDrainFraction float64
	// AutoRequeue turns requeueing on.
	AutoRequeue bool
}

// PolicyFromConfig reads the policy from the failure section of the config.
func PolicyFromConfig(c config.Failure) Policy {
	return Policy{MinConfidence: c.RequeueMinConfidence, MaxRequeues: c.RequeueMax,
		MaxDrainFraction: c.MaxDrainFraction, AutoRequeue: c.AutoRequeue}
}

// NodeState is what Slurm says about one of the job's nodes.
type NodeState struct {
	Name  string
	State string
}

// Input is everything Decide looks at.
type Input struct {
	Job       *store.Job
	Diagnosis *store.Diagnosis
	// Evidence is the store's recent evidence per node of the job.
	Evidence map[string][]store.Evidence
	// Nodes are the Slurm states of the job's nodes.
	Nodes []NodeState
	// PartitionSize is the number of nodes in the job's partition.
	PartitionSize int
	// PartitionDrained counts the partition's nodes already drained or down.
	PartitionDrained int
}

// Kind names an action.
type Kind string

// The actions recovery takes.
const (
	Requeue Kind = "requeue"
	Drain   Kind = "drain"
	Comment Kind = "comment"
)

// Action is one step of a plan.
type Action struct {
	Kind Kind
	// Target is a job id (requeue, comment) or a node name (drain).
	Target string
	// Text is the comment or drain reason, prefixed with "schedmate:".
	Text string
	// Exclude lists nodes a requeued job must avoid.
	Exclude []string
}

// Plan is what Decide chose, with the reasons for what it did not do.
type Plan struct {
	Actions []Action
	Notes   []string
}

// maxCommentText bounds the log text quoted in a comment or reason.
const maxCommentText = 160

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxCommentText {
		return s[:maxCommentText] + "…"
	}
	return s
}

// Decide chooses the recovery actions for a failed job. Only infrastructure
// failures are requeued; a node is drained only on trusted evidence (node
// checks, Xid/ECC read on the node, nccl-tests, or Slurm's own state), never
// on the job's log alone.
func Decide(in Input, p Policy) Plan {
	var plan Plan
	d := in.Diagnosis
	if in.Job == nil || d == nil || d.Category == "" || d.Category == "none" {
		plan.Notes = append(plan.Notes, "no failure diagnosed")
		return plan
	}
	label := d.Category
	if d.Component != "" {
		label += "/" + d.Component
	}
	if d.Category != "infrastructure" {
		plan.Actions = append(plan.Actions, Action{Kind: Comment, Target: in.Job.JobID,
			Text: slurm.Reason(d.Category, fmt.Sprintf("%s at log line %d: %s", label, d.Line, shorten(d.Text)))})
		plan.Notes = append(plan.Notes, d.Category+" failures are not requeued")
		return plan
	}
	suspects := suspectNodes(in)
	exclude := suspects
	if len(exclude) == 0 && len(in.Job.Nodes) == 1 {
		exclude = in.Job.Nodes
	}
	switch {
	case !p.AutoRequeue:
		plan.Notes = append(plan.Notes, "automatic requeue is off")
	case d.Confidence < p.MinConfidence:
		plan.Notes = append(plan.Notes, fmt.Sprintf("confidence %.2f below %.2f: not requeued", d.Confidence, p.MinConfidence))
	case in.Job.RequeueCount >= p.MaxRequeues:
		plan.Notes = append(plan.Notes, fmt.Sprintf("already requeued %d times (limit %d)", in.Job.RequeueCount, p.MaxRequeues))
	default:
		plan.Actions = append(plan.Actions, Action{Kind: Requeue, Target: in.Job.JobID, Exclude: exclude})
	}
	plan.Actions = append(plan.Actions, Action{Kind: Comment, Target: in.Job.JobID,
		Text: slurm.Reason(componentOr(d.Component), fmt.Sprintf("%s at log line %d: %s", label, d.Line, shorten(d.Text)))})
	plan.Actions, plan.Notes = appendDrains(plan.Actions, plan.Notes, in, suspects, p, d)
	return plan
}

func componentOr(c string) string {
	if c == "" {
		return "infrastructure"
	}
	return c
}

// appendDrains adds a drain for each suspect node Slurm has not already
// taken out, within the partition's drain budget.
func appendDrains(actions []Action, notes []string, in Input, suspects []string, p Policy, d *store.Diagnosis) ([]Action, []string) {
	if len(suspects) == 0 {
		return actions, append(notes, "no trusted node evidence: no node drained")
	}
	budget := max(1, int(math.Floor(p.MaxDrainFraction*float64(in.PartitionSize)))) - in.PartitionDrained
	for _, n := range suspects {
		if slurmTookOut(in.Nodes, n) {
			notes = append(notes, n+" is already out of service in Slurm")
			continue
		}
		if budget <= 0 {
			notes = append(notes, fmt.Sprintf("drain limit reached (%.0f%% of the partition): %s not drained", p.MaxDrainFraction*100, n))
			continue
		}
		budget--
		actions = append(actions, Action{Kind: Drain, Target: n,
			Text: slurm.Reason(componentOr(d.Component), fmt.Sprintf("job %s: %s", in.Job.JobID, evidenceSummary(in.Evidence[n])))})
	}
	return actions, notes
}

// suspectNodes returns the job's nodes with a trusted fault: a failed
// trusted check in the store, or a down/failing state in Slurm.
func suspectNodes(in Input) []string {
	var out []string
	for _, n := range in.Job.Nodes {
		if trustedFault(in.Evidence[n]) || slurmTookOut(in.Nodes, n) {
			out = append(out, n)
		}
	}
	return out
}

func trustedFault(ev []store.Evidence) bool {
	for _, e := range ev {
		if e.Trusted && !e.OK {
			return true
		}
	}
	return false
}

func slurmTookOut(nodes []NodeState, name string) bool {
	for _, n := range nodes {
		if n.Name != name {
			continue
		}
		s := strings.ToUpper(n.State)
		return strings.Contains(s, "DOWN") || strings.Contains(s, "FAIL") || strings.Contains(s, "DRAIN")
	}
	return false
}

func evidenceSummary(ev []store.Evidence) string {
	for _, e := range ev {
		if e.Trusted && !e.OK {
			return shorten(e.Source + " " + e.Check + ": " + e.Summary)
		}
	}
	return "node reported down by Slurm"
}
