// Package slurm talks to Slurm through domain verbs (Submit, Queue, Requeue,
// DrainNode, ...) and parses Slurm's machine-readable output formats.
package slurm

import (
	"context"
	"errors"
	"strings"
	"time"
)

// ErrNotFound reports that Slurm does not know the job or node.
var ErrNotFound = errors.New("slurm: not found")

// ErrUnavailable reports that Slurm could not be reached (controller down,
// commands missing or timing out).
var ErrUnavailable = errors.New("slurm: unavailable")

// Client is the set of Slurm operations schedmate uses.
type Client interface {
	// Submit submits a batch job and returns its id.
	Submit(ctx context.Context, req SubmitRequest) (string, error)
	// Job returns one job, from the controller or, once it has left the queue,
	// from accounting; an unknown id gives an error wrapping ErrNotFound.
	Job(ctx context.Context, id string) (*Job, error)
	// Queue lists jobs known to the controller.
	Queue(ctx context.Context, f QueueFilter) ([]Job, error)
	// Accounting lists jobs from the accounting database.
	Accounting(ctx context.Context, f AcctFilter) ([]Job, error)
	// Cancel cancels a job.
	Cancel(ctx context.Context, id string) error
	// Requeue puts a job back in the queue, optionally away from some nodes.
	Requeue(ctx context.Context, id string, opts RequeueOptions) error
	// SetComment sets a job's Comment, or its AdminComment when admin is true.
	SetComment(ctx context.Context, id, comment string, admin bool) error
	// Nodes lists all nodes.
	Nodes(ctx context.Context) ([]Node, error)
	// Node returns one node; an unknown name gives an error wrapping ErrNotFound.
	Node(ctx context.Context, name string) (*Node, error)
	// DrainNode drains a node with reason (see Reason).
	DrainNode(ctx context.Context, name, reason string) error
	// ResumeNode returns a drained or down node to service.
	ResumeNode(ctx context.Context, name string) error
}

// Job is a Slurm job as schedmate sees it. Times are zero when unknown and
// TimeLimit is zero when unlimited or unknown.
type Job struct {
	ID           string        `json:"id"`
	ArrayJobID   string        `json:"array_job_id,omitempty"`
	ArrayTaskID  string        `json:"array_task_id,omitempty"`
	Name         string        `json:"name"`
	User         string        `json:"user"`
	Account      string        `json:"account,omitempty"`
	Partition    string        `json:"partition,omitempty"`
	State        string        `json:"state"`
	Reason       string        `json:"reason,omitempty"`
	ExitCode     int           `json:"exit_code"`
	Signal       int           `json:"signal"`
	Submit       time.Time     `json:"submit,omitzero"`
	Start        time.Time     `json:"start,omitzero"`
	End          time.Time     `json:"end,omitzero"`
	TimeLimit    time.Duration `json:"time_limit"`
	NodeList     string        `json:"node_list,omitempty"`
	Nodes        []string      `json:"nodes,omitempty"`
	NumNodes     int           `json:"num_nodes"`
	NumCPUs      int           `json:"num_cpus"`
	GPUs         int           `json:"gpus"`
	WorkDir      string        `json:"work_dir,omitempty"`
	StdOut       string        `json:"stdout,omitempty"`
	StdErr       string        `json:"stderr,omitempty"`
	Command      string        `json:"command,omitempty"`
	Comment      string        `json:"comment,omitempty"`
	AdminComment string        `json:"admin_comment,omitempty"`
	RestartCount int           `json:"restart_count"`
	ExcNodes     string        `json:"exc_nodes,omitempty"`
}

// Node is a Slurm node.
type Node struct {
	Name       string   `json:"name"`
	State      string   `json:"state"`
	Reason     string   `json:"reason,omitempty"`
	Partitions []string `json:"partitions,omitempty"`
	GPUs       int      `json:"gpus"`
	Features   []string `json:"features,omitempty"`
}

// Drained reports whether the node is draining or drained.
func (n Node) Drained() bool { return strings.Contains(n.State, "DRAIN") }

// SubmitRequest describes a batch job to submit with sbatch.
type SubmitRequest struct {
	// Script is the batch script text, fed on stdin; ScriptPath is used when Script is empty.
	Script     string
	ScriptPath string
	// Args are passed to the script.
	Args      []string
	Name      string
	Partition string
	Account   string
	WorkDir   string
	// TimeLimit is rounded up to whole minutes; zero leaves the default.
	TimeLimit time.Duration
	Nodes     int
	// Gres is passed as --gres, e.g. "gpu:2".
	Gres    string
	Output  string
	Error   string
	Comment string
	Hold    bool
	// ExtraArgs are further sbatch options, placed before the script.
	ExtraArgs []string
}

// QueueFilter selects jobs for Queue.
type QueueFilter struct {
	// User limits the list to one user's jobs.
	User string
	// States limits the list to these job states (e.g. "RUNNING").
	States []string
	// All includes hidden partitions and, when States is empty, recently
	// finished jobs still held by the controller.
	All bool
}

// AcctFilter selects jobs for Accounting.
type AcctFilter struct {
	JobIDs []string
	// User limits the list to one user; empty means all users.
	User   string
	States []string
	// Start and End bound the time window; zero Start means Slurm's default (today).
	Start time.Time
	End   time.Time
}

// RequeueOptions controls Requeue.
type RequeueOptions struct {
	// ExcludeNodes are added to the job's ExcNodeList before it is released.
	ExcludeNodes []string
	// Hold leaves the requeued job held.
	Hold bool
}

// ReasonPrefix tags every reason and comment schedmate writes to Slurm.
const ReasonPrefix = "schedmate:"

// Reason formats a node reason or comment as "schedmate: component: detail".
func Reason(component, detail string) string {
	if component == "" {
		return ReasonPrefix + " " + detail
	}
	return ReasonPrefix + " " + component + ": " + detail
}

// IsOurs reports whether reason was written by schedmate.
func IsOurs(reason string) bool {
	return strings.HasPrefix(strings.TrimSpace(reason), ReasonPrefix)
}
