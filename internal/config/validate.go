package config

import (
	"fmt"
	"strings"
)

// Validate checks values that decode but make no sense, returning one
// KeyError per problem (without origins; Load fills them in).
func (c *Config) Validate() []*KeyError {
	var errs []*KeyError
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Reason: fmt.Sprintf(format, args...)})
	}
	if c.Version < 0 || c.Version > Version {
		bad("version", "schema version %d is not supported by this schedmate (it reads up to %d)", c.Version, Version)
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "warning", "error":
	default:
		bad("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	positive := map[string]int64{
		"store.lock_timeout":     int64(c.Store.LockTimeout),
		"slurm.timeout":          int64(c.Slurm.Timeout),
		"hooks.submit_deadline":  int64(c.Hooks.SubmitDeadline),
		"hooks.epilog_deadline":  int64(c.Hooks.EpilogDeadline),
		"advisor.top_k":          int64(c.Advisor.TopK),
		"metrics.progress_lines": int64(c.Metrics.ProgressLines),
		"metrics.refresh":        int64(c.Metrics.Refresh),
		"failure.chunk_lines":    int64(c.Failure.ChunkLines),
		"failure.window_lines":   int64(c.Failure.WindowLines),
		"health.nccl_timeout":    int64(c.Health.NCCLTimeout),
		"llm.timeout":            int64(c.LLM.Timeout),
		"llm.max_tokens":         int64(c.LLM.MaxTokens),
		"llm.concurrency":        int64(c.LLM.Concurrency),
	}
	for _, key := range Keys() {
		if n, ok := positive[key]; ok && n <= 0 {
			bad(key, "must be greater than zero")
		}
	}
	fractions := []struct {
		key string
		v   float64
	}{
		{"advisor.threshold", c.Advisor.Threshold},
		{"metrics.slowdown_ratio", c.Metrics.SlowdownRatio},
		{"failure.requeue_min_confidence", c.Failure.RequeueMinConfidence},
		{"failure.max_drain_fraction", c.Failure.MaxDrainFraction},
	}
	for _, f := range fractions {
		if f.v < 0 || f.v > 1 {
			bad(f.key, "%v is outside 0..1", f.v)
		}
	}
	if c.Failure.RequeueMax < 0 {
		bad("failure.requeue_max", "must not be negative")
	}
	if c.Metrics.StallSteps <= 0 {
		bad("metrics.stall_steps", "must be greater than zero")
	}
	for model, bw := range c.Health.BusBWThresholds {
		if bw <= 0 {
			bad("health.busbw_thresholds."+model, "must be greater than zero")
		}
	}
	if c.LLM.Enabled && c.LLM.BaseURL == "" {
		bad("llm.base_url", "is required when llm.enabled is true")
	}
	return errs
}
