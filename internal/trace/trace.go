// Package trace reads historical job traces (Slurm sacct, Google 2011, NREL
// Eagle, Standard Workload Format) into one job record used by the replay
// evaluation and by history import.
package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Job is one finished job of a trace, with what was known at submit time and
// its outcome. Times are seconds on the trace's own clock (Unix seconds for
// Slurm-based traces).
type Job struct {
	ID          string
	User        string
	Account     string
	Partition   string
	QOS         string
	Name        string
	LogicalName string // program identity when the trace has one (Google)
	Class       string // scheduling class or queue
	WorkDir     string
	SubmitLine  string
	Submit      float64
	Start       float64
	End         float64
	TimeLimit   float64 // requested time limit in seconds; 0 when unknown
	State       string  // COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
	NCPUs       int
	NNodes      int
	GPUs        int
}

// Duration returns the job's run time in seconds (never negative).
func (j *Job) Duration() float64 {
	if d := j.End - j.Start; d > 0 {
		return d
	}
	return 0
}

// Formats lists the trace formats Read understands.
var Formats = []string{"sacct", "google", "eagle", "swf"}

// MaxJobs bounds how many jobs one trace may hold, so a wrong or endless input
// ends in an error instead of exhausting memory.
const MaxJobs = 20_000_000

// maxLine bounds one record's length in bytes.
const maxLine = 1 << 20

// ErrFormat reports input that does not match the requested trace format.
var ErrFormat = errors.New("trace: malformed input")

// ErrUnknownFormat reports a format name Read does not know.
var ErrUnknownFormat = errors.New("unknown trace format")

// Read parses a whole trace in the given format and returns its jobs sorted by
// submit time (ties by input order). Jobs that never started or have no end
// are dropped, since they carry no duration.
func Read(r io.Reader, format string) ([]Job, error) {
	var (
		jobs []Job
		err  error
	)
	br := bufio.NewReaderSize(r, 1<<16)
	if err := rejectBinary(br); err != nil {
		return nil, err
	}
	switch strings.ToLower(format) {
	case "google":
		jobs, err = readGoogle(br)
	case "eagle":
		jobs, err = readEagle(br)
	case "swf":
		jobs, err = readSWF(br)
	case "sacct":
		jobs, err = readSacct(br)
	default:
		return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownFormat, format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%w: no finished jobs in %s trace", ErrFormat, format)
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Submit < jobs[b].Submit })
	return jobs, nil
}

// rejectBinary fails on input whose first bytes hold a NUL byte.
func rejectBinary(br *bufio.Reader) error {
	head, err := br.Peek(4096)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return fmt.Errorf("read trace: %w", err)
	}
	if len(head) == 0 {
		return fmt.Errorf("%w: empty trace", ErrFormat)
	}
	for _, b := range head {
		if b == 0 {
			return fmt.Errorf("%w: binary data, not a text trace", ErrFormat)
		}
	}
	return nil
}

// keep reports whether a parsed job has a usable duration and appends it.
func keep(jobs []Job, j Job) ([]Job, error) {
	if j.Start <= 0 && j.End <= 0 || j.End < j.Start {
		return jobs, nil
	}
	if len(jobs) >= MaxJobs {
		return nil, fmt.Errorf("%w: more than %d jobs", ErrFormat, MaxJobs)
	}
	return append(jobs, j), nil
}
