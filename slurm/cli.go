package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/runner"
	"github.com/schedmate/schedmate/slurm/hostlist"
)

// DefaultTimeout bounds each Slurm command when CLI.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// CLI implements Client over sbatch, squeue, scontrol, sacct and scancel.
type CLI struct {
	// Runner runs the commands.
	Runner runner.Runner
	// BinDir holds the Slurm commands; empty means PATH.
	BinDir string
	// Timeout bounds each command; zero means DefaultTimeout.
	Timeout time.Duration
}

var _ Client = (*CLI)(nil)

func (c *CLI) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return c.runStdin(ctx, nil, name, args...)
}

func (c *CLI) runStdin(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	bin := name
	if c.BinDir != "" {
		bin = filepath.Join(c.BinDir, name)
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	cmd := runner.Cmd{Name: bin, Args: args, Timeout: timeout}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	res, err := c.Runner.Run(ctx, cmd)
	if err != nil {
		return res.Stdout, classify(err, res.Stdout)
	}
	return res.Stdout, nil
}

// classify wraps err with ErrNotFound or ErrUnavailable where Slurm's answer
// says so; scontrol prints some answers ("Node x not found") on stdout.
func classify(err error, stdout []byte) error {
	var rerr *runner.Error
	stderr := strings.ToLower(truncate(string(stdout), 1024))
	if errors.As(err, &rerr) {
		stderr += " " + strings.ToLower(rerr.Stderr)
	}
	switch {
	case errors.Is(err, runner.ErrNotFound), errors.Is(err, context.DeadlineExceeded),
		strings.Contains(stderr, "unable to contact slurm controller"),
		strings.Contains(stderr, "socket timed out"),
		strings.Contains(stderr, "connection refused"):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case strings.Contains(stderr, "invalid job id"),
		strings.Contains(stderr, "not found"),
		strings.Contains(stderr, "invalid node name"):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// Submit implements Client.
func (c *CLI) Submit(ctx context.Context, req SubmitRequest) (string, error) {
	args := []string{"--parsable"}
	opt := func(flag, v string) {
		if v != "" {
			args = append(args, flag+"="+v)
		}
	}
	opt("--job-name", req.Name)
	opt("--partition", req.Partition)
	opt("--account", req.Account)
	opt("--chdir", req.WorkDir)
	opt("--gres", req.Gres)
	opt("--output", req.Output)
	opt("--error", req.Error)
	opt("--comment", req.Comment)
	if req.TimeLimit > 0 {
		opt("--time", FormatMinutes(req.TimeLimit))
	}
	if req.Nodes > 0 {
		opt("--nodes", fmt.Sprint(req.Nodes))
	}
	if req.Hold {
		args = append(args, "--hold")
	}
	args = append(args, req.ExtraArgs...)
	var stdin []byte
	switch {
	case req.Script != "":
		stdin = []byte(req.Script)
		if len(req.Args) > 0 {
			args = append(args, "/dev/stdin")
		}
	case req.ScriptPath != "":
		args = append(args, req.ScriptPath)
	default:
		return "", fmt.Errorf("sbatch: no script")
	}
	args = append(args, req.Args...)
	out, err := c.runStdin(ctx, stdin, "sbatch", args...)
	if err != nil {
		return "", fmt.Errorf("submit job: %w", err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if id == "" || strings.ContainsAny(id, " \n") {
		return "", fmt.Errorf("submit job: unexpected sbatch output %q", truncate(string(out), 200))
	}
	return id, nil
}

// Job implements Client. A job that has left the controller is looked up in accounting.
func (c *CLI) Job(ctx context.Context, id string) (*Job, error) {
	out, err := c.run(ctx, "scontrol", "show", "job", "-o", id)
	if err == nil {
		jobs, perr := ParseScontrolJobs(bytes.NewReader(out))
		if perr != nil {
			return nil, fmt.Errorf("job %s: %w", id, perr)
		}
		for i := range jobs {
			if jobs[i].ID == id {
				return &jobs[i], nil
			}
		}
		if len(jobs) > 0 {
			return &jobs[0], nil
		}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	jobs, aerr := c.Accounting(ctx, AcctFilter{JobIDs: []string{id}, Start: time.Unix(0, 0)})
	if aerr != nil {
		return nil, fmt.Errorf("job %s: %w", id, aerr)
	}
	for i := range jobs {
		if jobs[i].ID == id || jobs[i].ArrayJobID+"_"+jobs[i].ArrayTaskID == id {
			return &jobs[i], nil
		}
	}
	return nil, fmt.Errorf("job %s: %w", id, ErrNotFound)
}

// Queue implements Client.
func (c *CLI) Queue(ctx context.Context, f QueueFilter) ([]Job, error) {
	args := []string{"-h", "-o", SqueueFormat}
	if f.User != "" {
		args = append(args, "-u", f.User)
	}
	if f.All {
		args = append(args, "-a")
	}
	switch {
	case len(f.States) > 0:
		args = append(args, "-t", strings.Join(f.States, ","))
	case f.All:
		args = append(args, "-t", "all")
	}
	out, err := c.run(ctx, "squeue", args...)
	if err != nil {
		return nil, fmt.Errorf("list queue: %w", err)
	}
	jobs, err := ParseSqueue(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("list queue: %w", err)
	}
	return jobs, nil
}

// Accounting implements Client.
func (c *CLI) Accounting(ctx context.Context, f AcctFilter) ([]Job, error) {
	args := []string{"-X", "-P", "--delimiter=" + FieldSep, "-o", strings.Join(SacctFields, ",")}
	if f.User != "" {
		args = append(args, "-u", f.User)
	} else {
		args = append(args, "-a")
	}
	if len(f.JobIDs) > 0 {
		args = append(args, "-j", strings.Join(f.JobIDs, ","))
	}
	if len(f.States) > 0 {
		args = append(args, "-s", strings.Join(f.States, ","))
	}
	if !f.Start.IsZero() {
		args = append(args, "-S", f.Start.Format("2006-01-02T15:04:05"))
	}
	if !f.End.IsZero() {
		args = append(args, "-E", f.End.Format("2006-01-02T15:04:05"))
	}
	out, err := c.run(ctx, "sacct", args...)
	if err != nil {
		return nil, fmt.Errorf("read accounting: %w", err)
	}
	jobs, err := parseSacct(bytes.NewReader(out), FieldSep)
	if err != nil {
		return nil, fmt.Errorf("read accounting: %w", err)
	}
	return jobs, nil
}

// Cancel implements Client.
func (c *CLI) Cancel(ctx context.Context, id string) error {
	if _, err := c.run(ctx, "scancel", id); err != nil {
		return fmt.Errorf("cancel job %s: %w", id, err)
	}
	return nil
}

// Requeue implements Client. With ExcludeNodes the job is requeued held, its
// ExcNodeList extended (Slurm only updates it on pending jobs), then released
// unless opts.Hold.
func (c *CLI) Requeue(ctx context.Context, id string, opts RequeueOptions) error {
	if len(opts.ExcludeNodes) == 0 {
		verb := "requeue"
		if opts.Hold {
			verb = "requeuehold"
		}
		if _, err := c.run(ctx, "scontrol", verb, id); err != nil {
			return fmt.Errorf("requeue job %s: %w", id, err)
		}
		return nil
	}
	job, err := c.Job(ctx, id)
	if err != nil {
		return fmt.Errorf("requeue job %s: %w", id, err)
	}
	exclude := opts.ExcludeNodes
	if job.ExcNodes != "" {
		old, err := hostlist.Expand(job.ExcNodes)
		if err != nil {
			return fmt.Errorf("requeue job %s: %w", id, err)
		}
		exclude = append(old, exclude...)
	}
	if _, err := c.run(ctx, "scontrol", "requeuehold", id); err != nil {
		return fmt.Errorf("requeue job %s: %w", id, err)
	}
	if _, err := c.run(ctx, "scontrol", "update", "JobId="+id, "ExcNodeList="+hostlist.Compress(exclude)); err != nil {
		return fmt.Errorf("requeue job %s: exclude nodes: %w", id, err)
	}
	if !opts.Hold {
		if _, err := c.run(ctx, "scontrol", "release", id); err != nil {
			return fmt.Errorf("requeue job %s: release: %w", id, err)
		}
	}
	return nil
}

// SetComment implements Client.
func (c *CLI) SetComment(ctx context.Context, id, comment string, admin bool) error {
	key := "Comment="
	if admin {
		key = "AdminComment="
	}
	_, err := c.run(ctx, "scontrol", "update", "JobId="+id, key+comment)
	if err != nil && strings.Contains(err.Error(), "already finished") {
		err = c.setFinishedComment(ctx, id, key, comment)
	}
	if err != nil {
		return fmt.Errorf("set comment of job %s: %w", id, err)
	}
	return nil
}

// finishedCommentTries bounds the retries while slurmdbd has not yet
// received a just-finished job's record.
const finishedCommentTries = 4

// setFinishedComment sets the comment of a job that has ended, which
// slurmctld refuses, in the accounting database (sacctmgr modify job, as
// sjobexitmod does); sacct then shows it. slurmdbd stores the text in lower
// case. The job's record may reach slurmdbd a moment after the job ends, so
// "nothing modified" is retried briefly.
func (c *CLI) setFinishedComment(ctx context.Context, id, key, comment string) error {
	field := strings.TrimSuffix(key, "=")
	var err error
	for try := 0; try < finishedCommentTries; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w (after: %w)", ctx.Err(), err)
			case <-time.After(time.Duration(try) * 250 * time.Millisecond):
			}
		}
		_, err = c.run(ctx, "sacctmgr", "-i", "modify", "job", "where", "jobid="+id, "set", field+"=\""+strings.ReplaceAll(comment, "\"", "'")+"\"")
		if err == nil || !strings.Contains(err.Error(), "Nothing modified") && !strings.Contains(err.Error(), "didn't affect anything") {
			return err
		}
	}
	return err
}

// Nodes implements Client.
func (c *CLI) Nodes(ctx context.Context) ([]Node, error) {
	out, err := c.run(ctx, "scontrol", "show", "node", "-o")
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	nodes, err := ParseScontrolNodes(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return nodes, nil
}

// Node implements Client.
func (c *CLI) Node(ctx context.Context, name string) (*Node, error) {
	out, err := c.run(ctx, "scontrol", "show", "node", "-o", name)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	nodes, err := ParseScontrolNodes(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i], nil
		}
	}
	return nil, fmt.Errorf("node %s: %w", name, ErrNotFound)
}

// DrainNode implements Client.
func (c *CLI) DrainNode(ctx context.Context, name, reason string) error {
	if strings.TrimSpace(reason) == "" {
		return fmt.Errorf("drain node %s: empty reason", name)
	}
	if _, err := c.run(ctx, "scontrol", "update", "NodeName="+name, "State=DRAIN", "Reason="+reason); err != nil {
		return fmt.Errorf("drain node %s: %w", name, err)
	}
	return nil
}

// ResumeNode implements Client.
func (c *CLI) ResumeNode(ctx context.Context, name string) error {
	if _, err := c.run(ctx, "scontrol", "update", "NodeName="+name, "State=RESUME"); err != nil {
		return fmt.Errorf("resume node %s: %w", name, err)
	}
	return nil
}
