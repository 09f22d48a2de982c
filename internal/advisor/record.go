package advisor

import (
	"math"
	"strings"

	"github.com/schedmate/schedmate/internal/vector"
)

// State is the coarse outcome of an ended job.
type State uint8

// Outcomes the estimator distinguishes.
const (
	StateOther State = iota
	StateCompleted
	StateFailed
	StateCancelled
	StateTimeout
)

// ParseState maps Slurm and trace state names ("COMPLETED", "CANCELLED by
// 42", "OUT_OF_MEMORY", ...) to a State.
func ParseState(s string) State {
	s = strings.ToUpper(strings.TrimSpace(s))
	switch {
	case strings.HasPrefix(s, "COMPLETED"):
		return StateCompleted
	case strings.HasPrefix(s, "CANCELLED"):
		return StateCancelled
	case strings.HasPrefix(s, "TIMEOUT"), strings.HasPrefix(s, "DEADLINE"):
		return StateTimeout
	case strings.HasPrefix(s, "FAILED"), strings.HasPrefix(s, "NODE_FAIL"),
		strings.HasPrefix(s, "OUT_OF_MEMORY"), strings.HasPrefix(s, "BOOT_FAIL"),
		strings.HasPrefix(s, "PREEMPTED"), strings.HasPrefix(s, "EVICTED"), strings.HasPrefix(s, "LOST"):
		return StateFailed
	default:
		return StateOther
	}
}

// String returns the state's lower-case name.
func (s State) String() string {
	switch s {
	case StateCompleted:
		return "completed"
	case StateFailed:
		return "failed"
	case StateCancelled:
		return "cancelled"
	case StateTimeout:
		return "timeout"
	default:
		return "other"
	}
}

// ranFull reports whether a job in this state ran its natural length.
func (s State) ranFull() bool { return s == StateCompleted || s == StateTimeout }

// Record is one ended job as the index keeps it: its vector, the keys of the
// blocks it lives in and its outcome figures. Unknown GPU figures are NaN.
type Record struct {
	JobID      string
	Vec        vector.Vec
	LogicalKey uint64 // Hash of user and logical name
	UserKey    uint64
	PartKey    uint64
	End        int64 // Unix seconds (or trace clock)
	DurationS  float32
	TimeLimitS float32
	State      State
	GPUUtil    float32 // mean SM utilisation percent
	GPUMemGB   float32 // peak GPU memory, GiB
	StepTimeS  float32 // final step time
	// Endpoint is the job's vector from the embedding endpoint, quantised
	// (see QuantizeEndpoint); nil when it has none or none was loaded.
	Endpoint []int8
}

// Keys are the block keys of a job.
type Keys struct {
	Logical, User, Partition uint64
}

// KeysOf returns the block keys of a job. The first block holds the user's
// runs of the same program: the same logical name when one is given (a
// derived one is too coarse for a block: it collapses labels such as
// "app2" and "app7"), else the same job name.
func KeysOf(j *JobInfo) Keys {
	program := j.LogicalName
	if program == "" {
		program = j.Name
	}
	return Keys{
		Logical:   vector.Hash64("user+logical", j.User+"\x00"+program),
		User:      vector.Hash64("user", j.User),
		Partition: vector.Hash64("partition", j.Partition),
	}
}

// NewRecord builds the index record of an ended job. Pass NaN for unknown
// GPU figures.
func NewRecord(j *JobInfo, end int64, durationS float64, state State, gpuUtil, gpuMemGB, stepTimeS float64) Record {
	k := KeysOf(j)
	return Record{
		JobID:      j.ID,
		Vec:        Embed(j),
		LogicalKey: k.Logical,
		UserKey:    k.User,
		PartKey:    k.Partition,
		End:        end,
		DurationS:  float32(math.Max(durationS, 0)),
		TimeLimitS: float32(math.Max(j.TimeLimitS, 0)),
		State:      state,
		GPUUtil:    float32(gpuUtil),
		GPUMemGB:   float32(gpuMemGB),
		StepTimeS:  float32(stepTimeS),
	}
}
