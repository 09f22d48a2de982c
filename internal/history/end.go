package history

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
	"github.com/schedmate/schedmate/slurm/hostlist"
)

// End is a job's end as EpilogSlurmctld reports it.
type End struct {
	// UID is the submitting user's numeric id (SLURM_JOB_UID).
	UID string `json:"uid,omitempty"`
	// SlurmState is the state name Slurm gave, when the environment has one.
	SlurmState string `json:"slurm_state,omitempty"`
	// Job holds everything else read from the environment; State is filled
	// in when the end is recorded.
	Job store.Job `json:"job"`
}

// maxEnvValue bounds the environment values read; longer ones are refused.
const maxEnvValue = 64 << 10

// EndFromEnv reads a job's end from EpilogSlurmctld's environment.
func EndFromEnv(env map[string]string) (*End, error) {
	for k, v := range env {
		if strings.HasPrefix(k, "SLURM_") && len(v) > maxEnvValue {
			return nil, fmt.Errorf("epilog environment: %s is %d bytes long", k, len(v))
		}
	}
	id := env["SLURM_JOB_ID"]
	if !isJobID(id) {
		return nil, fmt.Errorf("epilog environment: invalid or missing SLURM_JOB_ID %q", id)
	}
	e := &End{
		UID:        env["SLURM_JOB_UID"],
		SlurmState: env["SLURM_JOB_STATE"],
		Job: store.Job{
			JobID:     id,
			User:      env["SLURM_JOB_USER"],
			Account:   env["SLURM_JOB_ACCOUNT"],
			Partition: env["SLURM_JOB_PARTITION"],
			Name:      env["SLURM_JOB_NAME"],
			WorkDir:   env["SLURM_JOB_WORK_DIR"],
			NodeList:  env["SLURM_JOB_NODELIST"],
			Source:    "epilog",
		},
	}
	j := &e.Job
	if arr, task := env["SLURM_ARRAY_JOB_ID"], env["SLURM_ARRAY_TASK_ID"]; isJobID(arr) && isJobID(task) {
		setArrayTask(j, id, arr, task)
	}
	var err error
	if j.Submit, err = epochVar(env, "SLURM_JOB_SUBMIT_TIME"); err != nil {
		return nil, err
	}
	if j.Start, err = epochVar(env, "SLURM_JOB_START_TIME"); err != nil {
		return nil, err
	}
	if j.End, err = epochVar(env, "SLURM_JOB_END_TIME"); err != nil {
		return nil, err
	}
	if j.ExitCode, j.Signal, err = exitStatus(env); err != nil {
		return nil, err
	}
	if v := env["SLURM_JOB_RESTART_COUNT"]; v != "" {
		if j.RequeueCount, err = strconv.Atoi(v); err != nil || j.RequeueCount < 0 {
			return nil, fmt.Errorf("epilog environment: invalid SLURM_JOB_RESTART_COUNT %q", v)
		}
	}
	if j.NodeList != "" && j.NodeList != "(null)" {
		if j.Nodes, err = hostlist.Expand(j.NodeList); err != nil {
			return nil, fmt.Errorf("epilog environment: SLURM_JOB_NODELIST: %w", err)
		}
		j.NumNodes = len(j.Nodes)
	} else {
		j.NodeList = ""
	}
	j.StdOut = stdioPath(env["SLURM_JOB_STDOUT"], j)
	j.StdErr = j.StdOut
	if p := env["SLURM_JOB_STDERR"]; p != "" {
		j.StdErr = stdioPath(p, j)
	}
	return e, nil
}

// SlurmID is the id Slurm knows the job by: an array task's own id, else
// the job id.
func (e *End) SlurmID() string {
	if raw := e.Job.Metadata[rawIDKey]; raw != "" {
		return raw
	}
	return e.Job.JobID
}

// CompleteFromSlurm fills in what EpilogSlurmctld's environment lacks from
// Slurm's view of the ended job (scontrol, which still holds the job while
// its epilog runs): the final state name when Slurm already has it, the
// exit status when the environment says 0:0 but Slurm knows better (a job
// cancelled while running is 0:0 in the environment, 0:15 in Slurm, and
// COMPLETING until its epilog ends), and the times and sizes the
// environment leaves out.
func (e *End) CompleteFromSlurm(sj *slurm.Job) {
	if s := normalizeState(sj.State); s != "" {
		e.SlurmState = s
	}
	j := &e.Job
	if j.ExitCode == 0 && j.Signal == 0 {
		j.ExitCode, j.Signal = sj.ExitCode, sj.Signal
	}
	for _, t := range []struct {
		dst *time.Time
		src time.Time
	}{{&j.Submit, sj.Submit}, {&j.Start, sj.Start}, {&j.End, sj.End}} {
		if t.dst.IsZero() && !t.src.IsZero() {
			*t.dst = t.src.UTC()
		}
	}
	if j.TimeLimit == 0 {
		j.TimeLimit = sj.TimeLimit
	}
	if j.NumCPUs == 0 {
		j.NumCPUs = sj.NumCPUs
	}
	if j.NumGPUs == 0 {
		j.NumGPUs = sj.GPUs
	}
	if j.Command == "" {
		j.Command = sj.Command
	}
}

// setArrayTask keys an array task as users know it (squeue, sacct):
// <array>_<task>, keeping Slurm's own id for the task in Metadata.
func setArrayTask(j *store.Job, rawID, arrayID, taskID string) {
	j.ArrayJobID, j.ArrayTaskID = arrayID, taskID
	j.JobID = arrayID + "_" + taskID
	if rawID != "" && rawID != j.JobID {
		if j.Metadata == nil {
			j.Metadata = map[string]string{}
		}
		j.Metadata[rawIDKey] = rawID
	}
}

// rawIDKey is the Metadata key holding an array task's own job id.
const rawIDKey = "job_id_raw"

// isJobID accepts Slurm's numeric ids.
func isJobID(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// epochVar reads a time given in seconds since the epoch; absent or zero
// means unknown.
func epochVar(env map[string]string, name string) (time.Time, error) {
	v := env[name]
	if v == "" || v == "0" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > 1<<40 {
		return time.Time{}, fmt.Errorf("epilog environment: invalid %s %q", name, v)
	}
	return time.Unix(n, 0).UTC(), nil
}

// exitStatus reads the job's exit code and signal: SLURM_JOB_EXIT_CODE2
// ("code:signal") when present, else the raw wait status in
// SLURM_JOB_EXIT_CODE, else SLURM_JOB_DERIVED_EC.
func exitStatus(env map[string]string) (code, sig int, err error) {
	if v := env["SLURM_JOB_EXIT_CODE2"]; v != "" {
		c, s, ok := strings.Cut(v, ":")
		code, err1 := strconv.Atoi(c)
		sig, err2 := strconv.Atoi(s)
		if !ok || err1 != nil || err2 != nil || code < 0 || sig < 0 {
			return 0, 0, fmt.Errorf("epilog environment: invalid SLURM_JOB_EXIT_CODE2 %q", v)
		}
		return code, sig, nil
	}
	for _, name := range []string{"SLURM_JOB_EXIT_CODE", "SLURM_JOB_DERIVED_EC"} {
		if v := env[name]; v != "" {
			status, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return 0, 0, fmt.Errorf("epilog environment: invalid %s %q", name, v)
			}
			return int(status>>8) & 0xff, int(status) & 0x7f, nil
		}
	}
	return 0, 0, nil
}

// Slurm's stand-in signal numbers, as sacct shows them in ExitCode.
const (
	sigOOM      = 125 // SIG_OOM (253) & 0x7f
	sigNodeFail = 126 // SIG_NODE_FAIL (254) & 0x7f
)

// jobStates maps the names, short codes and numbers Slurm uses for ended
// jobs onto state names.
var jobStates = map[string]string{
	"COMPLETED": "COMPLETED", "CD": "COMPLETED", "3": "COMPLETED",
	"CANCELLED": "CANCELLED", "CA": "CANCELLED", "4": "CANCELLED",
	"FAILED": "FAILED", "F": "FAILED", "5": "FAILED",
	"TIMEOUT": "TIMEOUT", "TO": "TIMEOUT", "6": "TIMEOUT",
	"NODE_FAIL": "NODE_FAIL", "NF": "NODE_FAIL", "7": "NODE_FAIL",
	"PREEMPTED": "PREEMPTED", "PR": "PREEMPTED", "8": "PREEMPTED",
	"BOOT_FAIL": "BOOT_FAIL", "BF": "BOOT_FAIL", "9": "BOOT_FAIL",
	"DEADLINE": "DEADLINE", "DL": "DEADLINE", "10": "DEADLINE",
	"OUT_OF_MEMORY": "OUT_OF_MEMORY", "OOM": "OUT_OF_MEMORY", "11": "OUT_OF_MEMORY",
}

// normalizeState reads a state as Slurm prints it ("CANCELLED by 1000",
// "TIMEOUT+", "OOM", or a numeric job_state with flag bits); "" when unknown.
func normalizeState(s string) string {
	name := slurm.NormalizeState(s)
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		name = strconv.FormatUint(n&0xff, 10) // JOB_STATE_BASE
	}
	return jobStates[name]
}

// DeriveState names how a job ended. A state Slurm gave wins; otherwise it
// is read from the exit status: Slurm's OOM and node-failure signals, a run
// that reached its time limit, a SIGTERM/SIGKILL/SIGINT (scancel), any other
// non-zero status, or success.
func DeriveState(slurmState string, exitCode, signal int, elapsed, limit time.Duration) string {
	if s := normalizeState(slurmState); s != "" {
		return s
	}
	// A shell killed by scancel's SIGTERM (or SIGKILL, SIGINT) may die of the
	// signal or exit with 128+signal, depending on what it was doing.
	killed := signal == 2 || signal == 9 || signal == 15 || signal == 0 && (exitCode == 128+2 || exitCode == 128+9 || exitCode == 128+15)
	switch {
	case signal == sigOOM:
		return "OUT_OF_MEMORY"
	case signal == sigNodeFail:
		return "NODE_FAIL"
	case limit > 0 && elapsed >= limit && (killed || signal == 0 && exitCode == 0 || exitCode == 128+9 || exitCode == 128+15):
		return "TIMEOUT"
	case killed:
		return "CANCELLED"
	case exitCode != 0 || signal != 0:
		return "FAILED"
	}
	return "COMPLETED"
}

// stdioPath turns the job's output pattern (Slurm's default when empty)
// into the file path, relative paths being under the working directory.
func stdioPath(pattern string, j *store.Job) string {
	if pattern == "(null)" {
		pattern = ""
	}
	id := j.JobID
	if raw := j.Metadata[rawIDKey]; raw != "" {
		id = raw
	}
	p := slurm.ExpandStdioPattern(pattern, slurm.Job{
		ID: id, ArrayJobID: j.ArrayJobID, ArrayTaskID: j.ArrayTaskID, User: j.User, Name: j.Name,
		NodeList: j.NodeList, Nodes: j.Nodes, WorkDir: j.WorkDir,
	})
	if !filepath.IsAbs(p) && j.WorkDir != "" {
		p = filepath.Join(j.WorkDir, p)
	}
	return p
}

// mergeJob copies onto dst the fields src sets: all of them when overwrite
// is true (src is newer), else only those dst lacks (src is older or less
// trusted). Either way dst keeps what only it knows (metrics, diagnosis,
// fingerprints from other sources); Metadata maps are merged key by key.
func mergeJob(dst, src *store.Job, overwrite bool) {
	meta := dst.Metadata
	dv, sv := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := range sv.NumField() {
		if f := sv.Field(i); !f.IsZero() && (overwrite || dv.Field(i).IsZero()) {
			dv.Field(i).Set(f)
		}
	}
	if meta != nil && src.Metadata != nil {
		merged := maps.Clone(meta)
		for k, v := range src.Metadata {
			if _, ok := merged[k]; overwrite || !ok {
				merged[k] = v
			}
		}
		dst.Metadata = merged
	}
}
