package store

import "time"

// Job is one Slurm job as schedmate remembers it: what was submitted, how it
// ended and what schedmate learned about it.
type Job struct {
	JobID       string `json:"job_id"`
	ArrayJobID  string `json:"array_job_id,omitempty"`
	ArrayTaskID string `json:"array_task_id,omitempty"`

	User       string `json:"user,omitempty"`
	Account    string `json:"account,omitempty"`
	Partition  string `json:"partition,omitempty"`
	Name       string `json:"name,omitempty"`
	WorkDir    string `json:"work_dir,omitempty"`
	Command    string `json:"command,omitempty"`
	SubmitLine string `json:"submit_line,omitempty"`
	Script     string `json:"script,omitempty"`

	Fingerprint     string            `json:"fingerprint,omitempty"`
	FingerprintHash string            `json:"fingerprint_hash,omitempty"`
	Vector          []float32         `json:"vector,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`

	Submit    time.Time     `json:"submit,omitzero"`
	Start     time.Time     `json:"start,omitzero"`
	End       time.Time     `json:"end,omitzero"`
	TimeLimit time.Duration `json:"-"` // "time_limit_s" in JSON (jobjson.go)

	State    string `json:"state,omitempty"`
	ExitCode int    `json:"exit_code"`
	Signal   int    `json:"signal,omitempty"`

	NodeList string   `json:"node_list,omitempty"`
	Nodes    []string `json:"nodes,omitempty"`
	NumNodes int      `json:"num_nodes,omitempty"`
	NumCPUs  int      `json:"num_cpus,omitempty"`
	NumGPUs  int      `json:"num_gpus,omitempty"`

	StdOut string `json:"stdout,omitempty"`
	StdErr string `json:"stderr,omitempty"`

	Metrics   *FinalMetrics   `json:"metrics,omitempty"`
	GPU       *GPUFigures     `json:"gpu,omitempty"`
	Diagnosis *Diagnosis      `json:"diagnosis,omitempty"`
	Estimate  *EstimateRecord `json:"estimate,omitempty"`

	RequeueCount int `json:"requeue_count,omitempty"`
	// Source says where the record came from: "epilog", "sacct", ...
	Source string `json:"source,omitempty"`
}

// Duration returns how long the job ran, or 0 when start or end is unknown.
func (j *Job) Duration() time.Duration {
	if j.Start.IsZero() || j.End.IsZero() || j.End.Before(j.Start) {
		return 0
	}
	return j.End.Sub(j.Start)
}

// FinalMetrics are the last training-progress figures read from a job's log.
type FinalMetrics struct {
	StepTimeS      float64  `json:"step_time_s,omitempty"`
	Throughput     float64  `json:"throughput,omitempty"`
	ThroughputUnit string   `json:"throughput_unit,omitempty"`
	Step           int64    `json:"step,omitempty"`
	TotalSteps     int64    `json:"total_steps,omitempty"`
	Loss           *float64 `json:"loss,omitempty"`
}

// GPUFigures summarise a job's GPU use.
type GPUFigures struct {
	MeanSMUtil   float64 `json:"mean_sm_util,omitempty"`
	PeakMemBytes uint64  `json:"peak_mem_bytes,omitempty"`
	Xids         []int   `json:"xids,omitempty"`
}

// Diagnosis is the root cause found for a failed job.
type Diagnosis struct {
	Category   string  `json:"category"`
	Component  string  `json:"component,omitempty"`
	Line       int     `json:"line,omitempty"`
	Text       string  `json:"text,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	Action     string  `json:"action,omitempty"`
}

// EstimateRecord is the duration estimate made for a job at submit time.
type EstimateRecord struct {
	EstimateS  float64 `json:"estimate_s"`
	Source     string  `json:"source,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
}

// AuditEntry records one action schedmate took or would take (DryRun). It is
// written before the action; Result and Err describe the outcome when known.
type AuditEntry struct {
	Seq     uint64            `json:"seq"`
	Time    time.Time         `json:"time"`
	Actor   string            `json:"actor,omitempty"`
	Action  string            `json:"action"`
	Target  string            `json:"target,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	DryRun  bool              `json:"dry_run,omitempty"`
	Result  string            `json:"result,omitempty"`
	Err     string            `json:"err,omitempty"`
	Details map[string]string `json:"details,omitempty"`
}

// Evidence is one observation about a node's health.
type Evidence struct {
	Node string    `json:"node"`
	Time time.Time `json:"time"`
	// Source is "nvml", "nccl", "slurm" or "xid".
	Source string `json:"source"`
	Check  string `json:"check,omitempty"`
	OK     bool   `json:"ok"`
	// Trusted is true when the observation came from the node itself or from
	// Slurm, never from text a user controls.
	Trusted bool              `json:"trusted"`
	Summary string            `json:"summary,omitempty"`
	JobID   string            `json:"job_id,omitempty"`
	Details map[string]string `json:"details,omitempty"`
}
