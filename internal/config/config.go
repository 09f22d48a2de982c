// Package config loads schedmate's typed, versioned configuration. Values
// come, highest precedence first, from command-line flags, SCHEDMATE_*
// environment variables, the configuration files (/etc/schedmate/config.yaml,
// then $XDG_CONFIG_HOME/schedmate/config.yaml, or the one file given with
// --config) and the defaults below.
package config

import "time"

// Version is the configuration schema version this binary reads.
const Version = 1

// Config is the whole configuration, one section per area.
type Config struct {
	// Version of the file's schema; 0 or absent means the current one.
	Version int     `yaml:"version" mapstructure:"version"`
	Log     Log     `yaml:"log" mapstructure:"log"`
	Store   Store   `yaml:"store" mapstructure:"store"`
	Slurm   Slurm   `yaml:"slurm" mapstructure:"slurm"`
	Hooks   Hooks   `yaml:"hooks" mapstructure:"hooks"`
	Advisor Advisor `yaml:"advisor" mapstructure:"advisor"`
	Metrics Metrics `yaml:"metrics" mapstructure:"metrics"`
	Failure Failure `yaml:"failure" mapstructure:"failure"`
	Health  Health  `yaml:"health" mapstructure:"health"`
	LLM     LLM     `yaml:"llm" mapstructure:"llm"`
}

// Log configures schedmate's own diagnostic logging (to stderr, or to a file
// while a full-screen view owns the terminal).
type Log struct {
	// Level is one of debug, info, warn, error.
	Level string `yaml:"level" mapstructure:"level"`
	// File receives the log instead of stderr when set; `top` always logs to
	// a file while it owns the screen.
	File string `yaml:"file" mapstructure:"file"`
}

// Store configures the history database.
type Store struct {
	// Path of the bbolt file; empty means /var/lib/schedmate/schedmate.db as
	// root, else $XDG_DATA_HOME/schedmate/schedmate.db.
	Path string `yaml:"path" mapstructure:"path"`
	// LockTimeout bounds the wait for another process's lock on the file.
	LockTimeout time.Duration `yaml:"lock_timeout" mapstructure:"lock_timeout"`
}

// Slurm configures how schedmate calls Slurm's commands.
type Slurm struct {
	// BinDir holds sbatch, squeue, scontrol, sacct and scancel; empty means
	// $PATH.
	BinDir string `yaml:"bin_dir" mapstructure:"bin_dir"`
	// Timeout bounds every Slurm command.
	Timeout time.Duration `yaml:"timeout" mapstructure:"timeout"`
}

// Hooks configures the commands Slurm runs: `hook submit` from
// job_submit.lua and `hook epilog` from EpilogSlurmctld.
type Hooks struct {
	// SubmitDeadline is the most `hook submit` may take before answering
	// with nothing (the job is then submitted untouched).
	SubmitDeadline time.Duration `yaml:"submit_deadline" mapstructure:"submit_deadline"`
	// EpilogDeadline is the most `hook epilog` spends before exiting 0.
	EpilogDeadline time.Duration `yaml:"epilog_deadline" mapstructure:"epilog_deadline"`
	// DryRun makes every hook action audited but not carried out.
	DryRun bool `yaml:"dry_run" mapstructure:"dry_run"`
	// SubmitCache is the submit answer cache that job_submit.lua applies
	// without running schedmate; empty means submit-answers.tsv beside the
	// database. job_submit.lua's SCHEDMATE_SUBMIT_CACHE must name the same
	// file (the default does for root's default database).
	SubmitCache string `yaml:"submit_cache" mapstructure:"submit_cache"`
}

// Advisor configures duration estimates.
type Advisor struct {
	// TopK is how many similar jobs an estimate averages.
	TopK int `yaml:"top_k" mapstructure:"top_k"`
	// Threshold is the least cosine similarity of a match.
	Threshold float64 `yaml:"threshold" mapstructure:"threshold"`
	// SetTimeMin makes `hook submit` set the job's time_min from the estimate.
	SetTimeMin bool `yaml:"set_time_min" mapstructure:"set_time_min"`
	// SetNice makes `hook submit` set a nice value that favours shorter jobs.
	SetNice bool `yaml:"set_nice" mapstructure:"set_nice"`
}

// Metrics configures progress extraction from training logs.
type Metrics struct {
	// ProgressLines is how many progress lines are read from the end.
	ProgressLines int `yaml:"progress_lines" mapstructure:"progress_lines"`
	// SlowdownRatio flags a slowdown when newer step times are slower than
	// older ones by this ratio of throughput.
	SlowdownRatio float64 `yaml:"slowdown_ratio" mapstructure:"slowdown_ratio"`
	// StallSteps flags a stall after this many step times without progress.
	StallSteps float64 `yaml:"stall_steps" mapstructure:"stall_steps"`
	// Refresh is how often `top` refreshes.
	Refresh time.Duration `yaml:"refresh" mapstructure:"refresh"`
}

// Failure configures root-cause location and automatic recovery.
type Failure struct {
	// ChunkLines is the size of the chunks the locator classifies.
	ChunkLines int `yaml:"chunk_lines" mapstructure:"chunk_lines"`
	// WindowLines is the context read around the root line for classification.
	WindowLines int `yaml:"window_lines" mapstructure:"window_lines"`
	// RequeueMax bounds automatic requeues per job.
	RequeueMax int `yaml:"requeue_max" mapstructure:"requeue_max"`
	// RequeueMinConfidence is the least classifier confidence that requeues.
	RequeueMinConfidence float64 `yaml:"requeue_min_confidence" mapstructure:"requeue_min_confidence"`
	// MaxDrainFraction caps the share of a partition schedmate may drain.
	MaxDrainFraction float64 `yaml:"max_drain_fraction" mapstructure:"max_drain_fraction"`
	// AutoRequeue turns automatic requeue of infrastructure failures on.
	AutoRequeue bool `yaml:"auto_requeue" mapstructure:"auto_requeue"`
}

// Health configures node checks.
type Health struct {
	// ExpectedGPUs is the GPU count every node should show; 0 takes Slurm's
	// gres count for the node.
	ExpectedGPUs int `yaml:"expected_gpus" mapstructure:"expected_gpus"`
	// NCCLCommand runs nccl-tests; {gpus} is replaced by the GPU count.
	NCCLCommand string `yaml:"nccl_command" mapstructure:"nccl_command"`
	// NCCLTimeout bounds one nccl-tests run.
	NCCLTimeout time.Duration `yaml:"nccl_timeout" mapstructure:"nccl_timeout"`
	// BusBWThresholds maps a GPU model or node feature to the least
	// acceptable all_reduce bus bandwidth in GB/s.
	BusBWThresholds map[string]float64 `yaml:"busbw_thresholds" mapstructure:"busbw_thresholds"`
	// DrainOnCheckError drains a node whose check itself broke.
	DrainOnCheckError bool `yaml:"drain_on_check_error" mapstructure:"drain_on_check_error"`
	// MaxTemperatureC flags a GPU hotter than this.
	MaxTemperatureC int `yaml:"max_temperature_c" mapstructure:"max_temperature_c"`
	// NCCLNodesCommand runs nccl-tests across named nodes; {nodes},
	// {nnodes}, {gpus} and {ranks} are replaced.
	NCCLNodesCommand string `yaml:"nccl_nodes_command" mapstructure:"nccl_nodes_command"`
	// MultiNodeBusBWThresholds maps a GPU model or node feature to the least
	// acceptable all_reduce bus bandwidth in GB/s across nodes; it depends on
	// the fabric (about 24 GB/s per 200 Gb/s NIC), so there is no default.
	MultiNodeBusBWThresholds map[string]float64 `yaml:"multi_node_busbw_thresholds" mapstructure:"multi_node_busbw_thresholds"`
	// BusBWStatistic summarises the rows of 1 GiB and more: "max" or "median".
	BusBWStatistic string `yaml:"busbw_statistic" mapstructure:"busbw_statistic"`
	// XidWait is how long `health check` listens for Xid events.
	XidWait time.Duration `yaml:"xid_wait" mapstructure:"xid_wait"`
	// GPUSpoolDir receives per-job GPU figures, and `health check` results
	// of nodes that cannot open the database, from the nodes; empty means
	// the database path with ".gpu-spool" appended. It must be shared with
	// the controller.
	GPUSpoolDir string `yaml:"gpu_spool_dir" mapstructure:"gpu_spool_dir"`
	// SampleInterval is the time between per-job GPU samples.
	SampleInterval time.Duration `yaml:"sample_interval" mapstructure:"sample_interval"`
	// SimulateGPUs, for tests and demonstrations only, replaces the NVIDIA
	// driver with a simulated machine ("dgxh100", "dgxh100:4"; also
	// dgxa100, dgxh200, dgxb200) whose GPUs are healthy and busy. Empty,
	// the default, uses the real driver.
	SimulateGPUs string `yaml:"simulate_gpus" mapstructure:"simulate_gpus"`
}

// LLM configures the optional OpenAI-compatible endpoint. Only interactive
// commands use it (diagnose, metrics, estimate), to refine an unsure
// deterministic answer; the Slurm hooks (submit, epilog) never call it, so a
// slow or absent server can never delay a job.
type LLM struct {
	// Enabled turns the LLM refinements on; off by default.
	Enabled bool `yaml:"enabled" mapstructure:"enabled"`
	// BaseURL of the OpenAI-compatible API, e.g. http://localhost:8000/v1.
	BaseURL string `yaml:"base_url" mapstructure:"base_url"`
	// Model for chat completions.
	Model string `yaml:"model" mapstructure:"model"`
	// EmbeddingModel for embeddings; empty keeps the built-in embedding.
	EmbeddingModel string `yaml:"embedding_model" mapstructure:"embedding_model"`
	// APIKeyFile holds the API key; read at use, never logged.
	APIKeyFile string `yaml:"api_key_file" mapstructure:"api_key_file"`
	// APIKeyEnv names an environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env" mapstructure:"api_key_env"`
	// Timeout bounds one call.
	Timeout time.Duration `yaml:"timeout" mapstructure:"timeout"`
	// MaxTokens bounds one completion.
	MaxTokens int `yaml:"max_tokens" mapstructure:"max_tokens"`
	// Concurrency bounds calls in flight.
	Concurrency int `yaml:"concurrency" mapstructure:"concurrency"`
	// MaxRetries is how many times a 429 or 5xx answer is retried.
	MaxRetries int `yaml:"max_retries" mapstructure:"max_retries"`
	// MaxRetryWait caps one Retry-After wait; a longer one ends the call.
	MaxRetryWait time.Duration `yaml:"max_retry_wait" mapstructure:"max_retry_wait"`
}

// Default returns the configuration used when nothing overrides it.
func Default() *Config {
	return &Config{
		Version: Version,
		Log:     Log{Level: "warn"},
		Store:   Store{LockTimeout: 5 * time.Second},
		Slurm:   Slurm{Timeout: 10 * time.Second},
		Hooks:   Hooks{SubmitDeadline: time.Second, EpilogDeadline: 5 * time.Second},
		Advisor: Advisor{TopK: 3, Threshold: 0.90},
		Metrics: Metrics{ProgressLines: 30, SlowdownRatio: 0.65, StallSteps: 20, Refresh: 3 * time.Second},
		Failure: Failure{
			ChunkLines: 20, WindowLines: 200, RequeueMax: 2, RequeueMinConfidence: 0.7,
			MaxDrainFraction: 0.1, AutoRequeue: true,
		},
		Health: Health{
			NCCLCommand: "all_reduce_perf -b 8M -e 8G -f 2 -g {gpus}",
			NCCLTimeout: 5 * time.Minute,
			// Single-node all_reduce floors from production checks (Azure
			// HPC health checks: 228 for 8x A100, 460 for 8x H100, 431 for
			// 8x H200, 432 for 4x GB200) with a margin; GB300 from OCI's
			// published 685 GB/s for one 4-GPU host.
			BusBWThresholds: map[string]float64{
				"A100": 215, "H100": 440, "H200": 431, "GB200": 432, "GB300": 600,
			},
			MaxTemperatureC:  90,
			NCCLNodesCommand: "srun --immediate=30 -w {nodes} -N {nnodes} --ntasks-per-node=1 --gpus-per-node={gpus} all_reduce_perf -b 8M -e 8G -f 2 -g {gpus}",
			BusBWStatistic:   "max",
			XidWait:          time.Second,
			SampleInterval:   10 * time.Second,
		},
		LLM: LLM{Timeout: 30 * time.Second, MaxTokens: 1024, Concurrency: 2, APIKeyEnv: "SCHEDMATE_LLM_API_KEY", MaxRetries: 2, MaxRetryWait: 10 * time.Second},
	}
}
