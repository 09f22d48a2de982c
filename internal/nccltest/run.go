package nccltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/schedmate/schedmate/internal/lazyre"
	"github.com/schedmate/schedmate/internal/runner"
)

// DefaultLocalCommand runs all_reduce_perf on the local node's GPUs.
// Placeholders: {gpus} (GPUs per node), {nodes} (comma list), {nnodes},
// {ranks} (nodes times GPUs).
var DefaultLocalCommand = []string{"all_reduce_perf", "-b", "8M", "-e", "8G", "-f", "2", "-g", "{gpus}"}

// DefaultNodesCommand runs all_reduce_perf across a node set through Slurm,
// one task per node driving all of that node's GPUs (an MPI build of
// nccl-tests is needed for more than one node). --immediate makes srun give
// up when other jobs hold the nodes, which Test reports as StatusNotTested
// rather than waiting until the timeout calls it a hang.
var DefaultNodesCommand = []string{"srun", "--immediate=30", "-w", "{nodes}", "-N", "{nnodes}", "--ntasks-per-node=1", "--gpus-per-node={gpus}", "all_reduce_perf", "-b", "8M", "-e", "8G", "-f", "2", "-g", "{gpus}"}

// reExecFailed matches a launcher that could not start the binary on a
// node ("slurmstepd: error: execve(): all_reduce_perf: No such file or
// directory", "orted: ... not found").
var reExecFailed = lazyre.New(`(?m)^.*(?:execve\(\): .*: (?:No such file or directory|Permission denied)|mpirun was unable to find the specified executable|was unable to launch the specified application).*$`)

// reNodesBusy matches srun giving up on an allocation or step the nodes
// cannot take now ("srun: error: Unable to allocate resources: Requested
// nodes are busy", "... Immediate execution impossible, insufficient
// priority", "Unable to create step for job 7: Requested nodes are busy").
var reNodesBusy = lazyre.New(`(?m)^srun: error: Unable to (?:allocate resources|create (?:job )?step for job \d+): (?:Requested nodes are busy|Immediate execution impossible.*|Resource temporarily unavailable|Job violates accounting/QOS policy.*)\s*$`)

// reQueued matches srun waiting for nodes held by other jobs.
var reQueued = lazyre.New(`(?m)^srun: (?:job \d+ queued and waiting for resources|Job \d+ step creation temporarily disabled, retrying.*)\s*$`)

// DefaultTimeout bounds one nccl-tests run; hangs show only as silence.
const DefaultTimeout = 10 * time.Minute

// Tester runs nccl-tests and judges the result.
type Tester struct {
	// Runner runs the command.
	Runner runner.Runner
	// LocalCommand is the argv for a test of the local node; nil means
	// DefaultLocalCommand.
	LocalCommand []string
	// NodesCommand is the argv for a test of a named node set; nil means
	// DefaultNodesCommand.
	NodesCommand []string
	// GPUsPerNode fills {gpus} and the expected rank count; 0 leaves the
	// rank count unchecked and fills {gpus} with 1.
	GPUsPerNode int
	// Timeout bounds one run; 0 means DefaultTimeout.
	Timeout time.Duration
	// Thresholds are the bandwidth floors to choose from.
	Thresholds []Threshold
	// Features are the Slurm node features used to pick a threshold.
	Features []string
	// Statistic and LargeBytes tune the bandwidth summary (see Criteria).
	Statistic  Statistic
	LargeBytes int64
}

// Report is the outcome of one Tester run.
type Report struct {
	// Nodes are the nodes tested; empty for the local node.
	Nodes []string `json:"nodes,omitempty"`
	// Argv is the command that ran.
	Argv []string `json:"argv"`
	// Result is the parsed output; nil when nothing could be parsed.
	Result *Result `json:"result,omitempty"`
	// Verdict is the judgement.
	Verdict Verdict `json:"verdict"`
	// Duration is how long the run took.
	Duration time.Duration `json:"duration_ns"`
}

// Test runs nccl-tests on nodes (the local node when empty) and judges the
// output. A missing, hanging, crashing or garbage-printing nccl-tests gives
// StatusCheckError with the reason; only a run whose output shows a fault
// gives StatusFail. It never returns an error: every problem is a verdict.
func (t *Tester) Test(ctx context.Context, nodes []string) Report {
	argv := t.argv(nodes)
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	start := time.Now()
	out, runErr := t.Runner.Run(ctx, runner.Cmd{Name: argv[0], Args: argv[1:], Timeout: timeout})
	rep := Report{Nodes: nodes, Argv: argv, Duration: time.Since(start)}
	combined := append(append([]byte{}, out.Stdout...), out.Stderr...)
	res, parseErr := ParseBytes(combined)
	if parseErr == nil {
		rep.Result = res
	}
	crit := t.criteria(res, len(nodes))
	switch {
	case errors.Is(runErr, runner.ErrNotFound):
		rep.Verdict = checkError("not-found", fmt.Sprintf("nccl-tests command not found: %s", argv[0]))
	case runErr != nil && res == nil && reNodesBusy().Match(combined):
		rep.Verdict = notTested("not tested (nodes busy)" + tail(reNodesBusy().Find(combined)))
	case errors.Is(runErr, context.DeadlineExceeded) && res == nil && reQueued().Match(combined):
		rep.Verdict = notTested(fmt.Sprintf("not tested (nodes busy): still waiting for them after %s", timeout))
	case errors.Is(runErr, context.DeadlineExceeded):
		if res != nil && res.Outcome == OutcomeFailed {
			rep.Verdict = Judge(res, crit)
			break
		}
		rep.Verdict = checkError("timeout", fmt.Sprintf("no result within %s (hang)", timeout))
	case errors.Is(runErr, context.Canceled):
		rep.Verdict = checkError("canceled", "run canceled")
	case reExecFailed().Match(combined):
		rep.Verdict = checkError("not-found", "nccl-tests could not start on a node"+tail(reExecFailed().Find(combined)))
	case res != nil && res.LauncherOnly():
		rep.Verdict = checkError("crashed", "launcher failed before nccl-tests ran: "+res.Failures[0].Text)
	case runErr != nil:
		if res != nil && res.Outcome == OutcomeFailed {
			rep.Verdict = Judge(res, crit)
			break
		}
		rep.Verdict = checkError("crashed", fmt.Sprintf("%s%s", exitText(runErr), tail(out.Stderr)))
	case errors.Is(parseErr, ErrBinary):
		rep.Verdict = checkError("garbage", fmt.Sprintf("unusable output: %v (%d bytes)", parseErr, len(combined)))
	case parseErr != nil:
		rep.Verdict = checkError("garbage", fmt.Sprintf("unusable output: %v%s", parseErr, tail(combined)))
	default:
		rep.Verdict = Judge(res, crit)
	}
	return rep
}

// template returns the command template for a test of n nodes (0: local).
func (t *Tester) template(n int) []string {
	if n > 0 {
		if t.NodesCommand == nil {
			return DefaultNodesCommand
		}
		return t.NodesCommand
	}
	if t.LocalCommand == nil {
		return DefaultLocalCommand
	}
	return t.LocalCommand
}

func sizesFromGPUs(tmpl []string) bool {
	for _, a := range tmpl {
		if strings.Contains(a, "{gpus}") || strings.Contains(a, "{ranks}") {
			return true
		}
	}
	return false
}

func (t *Tester) argv(nodes []string) []string {
	tmpl := t.template(len(nodes))
	gpus := max(t.GPUsPerNode, 1)
	r := strings.NewReplacer(
		"{gpus}", strconv.Itoa(gpus),
		"{nodes}", strings.Join(nodes, ","),
		"{nnodes}", strconv.Itoa(max(len(nodes), 1)),
		"{ranks}", strconv.Itoa(gpus*max(len(nodes), 1)),
	)
	argv := make([]string, len(tmpl))
	for i, a := range tmpl {
		argv[i] = r.Replace(a)
	}
	return argv
}

func (t *Tester) criteria(res *Result, nodes int) Criteria {
	c := Criteria{Statistic: t.Statistic, LargeBytes: t.LargeBytes}
	// The rank count is known only when the command was sized from the GPU
	// count; a command that does not use {gpus} or {ranks} launches what it
	// launches.
	if t.GPUsPerNode > 0 && sizesFromGPUs(t.template(nodes)) {
		c.ExpectedRanks = t.GPUsPerNode * max(nodes, 1)
	}
	if res != nil {
		if th, ok := SelectThreshold(t.Thresholds, res.GPUModel, t.Features, res.Collective, nodes); ok {
			c.MinBusBW = th.MinBusBW
		}
	}
	return c
}

func notTested(reason string) Verdict {
	return Verdict{Status: StatusNotTested, Kind: "nodes-busy", Reasons: []string{reason}}
}

func checkError(kind, reason string) Verdict {
	return Verdict{Status: StatusCheckError, Kind: kind, Reasons: []string{reason}}
}

func exitText(err error) string {
	var rerr *runner.Error
	if errors.As(err, &rerr) && rerr.ExitCode >= 0 {
		return fmt.Sprintf("exit status %d", rerr.ExitCode)
	}
	return err.Error()
}

// tail returns ": " and the last non-empty line of b, bounded, or "".
func tail(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	if len(b) > 200 {
		b = b[:200]
	}
	printable := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, strings.ToValidUTF8(string(bytes.TrimSpace(b)), "\uFFFD"))
	return ": " + printable
}
