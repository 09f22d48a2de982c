// Package slurmfake is an in-memory slurm.Client for tests: build it with
// jobs and nodes, inspect the calls it received, and make any verb fail or
// hang with interceptors.
package slurmfake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schedmate/schedmate/slurm"
	"github.com/schedmate/schedmate/slurm/hostlist"
)

// Call records one verb the fake received.
type Call struct {
	// Verb is the Client method name, e.g. "DrainNode".
	Verb string
	// Args are the method's string arguments (ids, names, reasons).
	Args []string
}

// Interceptor runs before a verb; a non-nil error is returned instead of
// calling the fake's own implementation.
type Interceptor func(ctx context.Context, c Call) error

// Fake is an in-memory slurm.Client. It is safe for concurrent use.
type Fake struct {
	mu           sync.Mutex
	jobs         map[string]*slurm.Job
	jobOrder     []string
	nodes        map[string]*slurm.Node
	nodeOrder    []string
	nextID       int
	calls        []Call
	interceptors map[string][]Interceptor
	// Now gives the time stamped on submitted and finished jobs.
	Now func() time.Time
}

var _ slurm.Client = (*Fake)(nil)

// Option configures a Fake.
type Option func(*Fake)

// WithJobs adds jobs.
func WithJobs(jobs ...slurm.Job) Option {
	return func(f *Fake) {
		for _, j := range jobs {
			f.AddJob(j)
		}
	}
}

// WithNodes adds nodes.
func WithNodes(nodes ...slurm.Node) Option {
	return func(f *Fake) {
		for _, n := range nodes {
			f.AddNode(n)
		}
	}
}

// WithGPUNodes adds idle nodes named prefix1..prefixN with gpus GPUs each.
func WithGPUNodes(prefix string, n, gpus int) Option {
	return func(f *Fake) {
		for i := 1; i <= n; i++ {
			f.AddNode(slurm.Node{Name: prefix + strconv.Itoa(i), State: "IDLE", GPUs: gpus, Partitions: []string{"gpu"}})
		}
	}
}

// WithInterceptor adds an interceptor for verb ("*" for every verb).
func WithInterceptor(verb string, fn Interceptor) Option {
	return func(f *Fake) { f.Intercept(verb, fn) }
}

// New returns a Fake with the given options; job ids start at 1000.
func New(opts ...Option) *Fake {
	f := &Fake{jobs: map[string]*slurm.Job{}, nodes: map[string]*slurm.Node{}, nextID: 1000,
		interceptors: map[string][]Interceptor{}, Now: time.Now}
	for _, o := range opts {
		o(f)
	}
	return f
}

// AddJob adds or replaces a job.
func (f *Fake) AddJob(j slurm.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.jobs[j.ID]; !ok {
		f.jobOrder = append(f.jobOrder, j.ID)
	}
	if n, err := strconv.Atoi(j.ID); err == nil && n >= f.nextID {
		f.nextID = n + 1
	}
	f.jobs[j.ID] = &j
}

// AddNode adds or replaces a node.
func (f *Fake) AddNode(n slurm.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.nodes[n.Name]; !ok {
		f.nodeOrder = append(f.nodeOrder, n.Name)
	}
	f.nodes[n.Name] = &n
}

// Intercept adds an interceptor for verb ("*" for every verb).
func (f *Fake) Intercept(verb string, fn Interceptor) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.interceptors[verb] = append(f.interceptors[verb], fn)
}

// Fail makes verb return err.
func (f *Fake) Fail(verb string, err error) {
	f.Intercept(verb, func(context.Context, Call) error { return err })
}

// Hang makes verb block until its context ends, then return the context's error
// wrapped with slurm.ErrUnavailable.
func (f *Fake) Hang(verb string) {
	f.Intercept(verb, func(ctx context.Context, c Call) error {
		<-ctx.Done()
		return fmt.Errorf("%s: %w: %w", c.Verb, slurm.ErrUnavailable, ctx.Err())
	})
}

// Calls returns the calls received so far.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// CallsTo returns the calls received for one verb.
func (f *Fake) CallsTo(verb string) []Call {
	var out []Call
	for _, c := range f.Calls() {
		if c.Verb == verb {
			out = append(out, c)
		}
	}
	return out
}

// enter records a call and runs its interceptors.
func (f *Fake) enter(ctx context.Context, verb string, args ...string) error {
	c := Call{Verb: verb, Args: args}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	fns := append(slices.Clone(f.interceptors[verb]), f.interceptors["*"]...)
	f.mu.Unlock()
	for _, fn := range fns {
		if err := fn(ctx, c); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// activeStates are the states squeue lists by default.
var activeStates = []string{"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING"}

// Submit implements slurm.Client: the job starts RUNNING on the first
// schedulable node, or stays PENDING when held or no node is free.
func (f *Fake) Submit(ctx context.Context, req slurm.SubmitRequest) (string, error) {
	if err := f.enter(ctx, "Submit", req.Name); err != nil {
		return "", err
	}
	if req.Script == "" && req.ScriptPath == "" {
		return "", fmt.Errorf("submit job: no script")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := strconv.Itoa(f.nextID)
	f.nextID++
	nodes := max(req.Nodes, 1)
	j := &slurm.Job{ID: id, Name: req.Name, User: "fake", Account: req.Account, Partition: req.Partition,
		State: "PENDING", Submit: f.Now(), TimeLimit: req.TimeLimit, NumNodes: nodes, NumCPUs: nodes,
		GPUs: slurm.ParseGPUs(req.Gres) * nodes, WorkDir: req.WorkDir, Comment: req.Comment,
		Command: req.ScriptPath}
	if j.Name == "" {
		j.Name = "sbatch"
	}
	j.StdOut = slurm.ExpandStdioPattern(req.Output, *j)
	j.StdErr = j.StdOut
	if req.Error != "" {
		j.StdErr = slurm.ExpandStdioPattern(req.Error, *j)
	}
	if req.Hold {
		j.Reason = "JobHeldUser"
	} else {
		f.schedule(j)
	}
	f.jobs[id] = j
	f.jobOrder = append(f.jobOrder, id)
	return id, nil
}

// schedule starts j on the first node that is neither drained, down nor excluded.
func (f *Fake) schedule(j *slurm.Job) {
	excluded, _ := hostlist.Expand(j.ExcNodes)
	for _, name := range f.nodeOrder {
		n := f.nodes[name]
		if n.Drained() || strings.Contains(n.State, "DOWN") || slices.Contains(excluded, name) {
			continue
		}
		j.State, j.Reason, j.Start = "RUNNING", "", f.Now()
		j.NodeList, j.Nodes = name, []string{name}
		return
	}
	j.Reason = "Resources"
}

// Job implements slurm.Client.
func (f *Fake) Job(ctx context.Context, id string) (*slurm.Job, error) {
	if err := f.enter(ctx, "Job", id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %s: %w", id, slurm.ErrNotFound)
	}
	c := *j
	return &c, nil
}

// Queue implements slurm.Client.
func (f *Fake) Queue(ctx context.Context, q slurm.QueueFilter) ([]slurm.Job, error) {
	if err := f.enter(ctx, "Queue", q.User); err != nil {
		return nil, err
	}
	states := q.States
	if len(states) == 0 && !q.All {
		states = activeStates
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []slurm.Job
	for _, id := range f.jobOrder {
		j := f.jobs[id]
		if (q.User != "" && j.User != q.User) || (len(states) > 0 && !slices.Contains(states, j.State)) {
			continue
		}
		out = append(out, *j)
	}
	return out, nil
}

// Accounting implements slurm.Client; it lists every job the fake knows.
func (f *Fake) Accounting(ctx context.Context, a slurm.AcctFilter) ([]slurm.Job, error) {
	if err := f.enter(ctx, "Accounting", a.JobIDs...); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []slurm.Job
	for _, id := range f.jobOrder {
		j := f.jobs[id]
		if (len(a.JobIDs) > 0 && !slices.Contains(a.JobIDs, id)) || (a.User != "" && j.User != a.User) ||
			(len(a.States) > 0 && !slices.Contains(a.States, j.State)) {
			continue
		}
		out = append(out, *j)
	}
	return out, nil
}

// Cancel implements slurm.Client.
func (f *Fake) Cancel(ctx context.Context, id string) error {
	if err := f.enter(ctx, "Cancel", id); err != nil {
		return err
	}
	return f.updateJob(id, func(j *slurm.Job) error {
		if !slices.Contains(activeStates, j.State) {
			return fmt.Errorf("cancel job %s: job already completed", id)
		}
		j.State, j.End = "CANCELLED", f.Now()
		return nil
	})
}

// Requeue implements slurm.Client.
func (f *Fake) Requeue(ctx context.Context, id string, opts slurm.RequeueOptions) error {
	if err := f.enter(ctx, "Requeue", append([]string{id}, opts.ExcludeNodes...)...); err != nil {
		return err
	}
	return f.updateJob(id, func(j *slurm.Job) error {
		if j.State == "PENDING" {
			return fmt.Errorf("requeue job %s: job is pending", id)
		}
		if len(opts.ExcludeNodes) > 0 {
			old, _ := hostlist.Expand(j.ExcNodes)
			j.ExcNodes = hostlist.Compress(append(old, opts.ExcludeNodes...))
		}
		j.State, j.RestartCount, j.NodeList, j.Nodes = "PENDING", j.RestartCount+1, "", nil
		j.Start, j.End = time.Time{}, time.Time{}
		if opts.Hold {
			j.Reason = "JobHeldUser"
		} else {
			f.schedule(j)
		}
		return nil
	})
}

// SetComment implements slurm.Client.
func (f *Fake) SetComment(ctx context.Context, id, comment string, admin bool) error {
	if err := f.enter(ctx, "SetComment", id, comment, strconv.FormatBool(admin)); err != nil {
		return err
	}
	return f.updateJob(id, func(j *slurm.Job) error {
		if admin {
			j.AdminComment = comment
		} else {
			j.Comment = comment
		}
		return nil
	})
}

func (f *Fake) updateJob(id string, fn func(*slurm.Job) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return fmt.Errorf("job %s: %w", id, slurm.ErrNotFound)
	}
	return fn(j)
}

// Nodes implements slurm.Client.
func (f *Fake) Nodes(ctx context.Context) ([]slurm.Node, error) {
	if err := f.enter(ctx, "Nodes"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]slurm.Node, 0, len(f.nodeOrder))
	for _, name := range f.nodeOrder {
		out = append(out, *f.nodes[name])
	}
	return out, nil
}

// Node implements slurm.Client.
func (f *Fake) Node(ctx context.Context, name string) (*slurm.Node, error) {
	if err := f.enter(ctx, "Node", name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[name]
	if !ok {
		return nil, fmt.Errorf("node %s: %w", name, slurm.ErrNotFound)
	}
	c := *n
	return &c, nil
}

// DrainNode implements slurm.Client.
func (f *Fake) DrainNode(ctx context.Context, name, reason string) error {
	if err := f.enter(ctx, "DrainNode", name, reason); err != nil {
		return err
	}
	if strings.TrimSpace(reason) == "" {
		return fmt.Errorf("drain node %s: empty reason", name)
	}
	return f.updateNode(name, func(n *slurm.Node) {
		base, _, _ := strings.Cut(n.State, "+")
		n.State, n.Reason = base+"+DRAIN", reason
	})
}

// ResumeNode implements slurm.Client.
func (f *Fake) ResumeNode(ctx context.Context, name string) error {
	if err := f.enter(ctx, "ResumeNode", name); err != nil {
		return err
	}
	return f.updateNode(name, func(n *slurm.Node) {
		base, _, _ := strings.Cut(n.State, "+")
		if base == "DOWN" {
			base = "IDLE"
		}
		n.State, n.Reason = base, ""
	})
}

func (f *Fake) updateNode(name string, fn func(*slurm.Node)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[name]
	if !ok {
		return fmt.Errorf("node %s: %w", name, slurm.ErrNotFound)
	}
	fn(n)
	return nil
}
