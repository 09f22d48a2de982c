package metrics

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
)

// epochLog has progress lines but no step time any rule can read.
const epochLog = "step 100 loss 2.1\nstep 200 loss 2.0\nstep 300 loss 1.9\n"

func TestMetricsLLM(t *testing.T) {
	path := writeLog(t, epochLog)
	tests := []struct {
		name    string
		enabled bool
		noLLM   bool
		reply   *llmtest.Reply
		step    any
		noteHas string
	}{
		{"disabled", false, false, nil, nil, ""},
		{"no-llm flag", true, true, nil, nil, ""},
		{"good answer", true, false, &llmtest.Reply{Content: `{"known":true,"step_time_s":1.5,"line":3}`}, 1.5, "llm step time from line 3"},
		{"down", true, false, &llmtest.Reply{Status: 503}, nil, "deterministic answer stands: llm unavailable"},
		{"slow", true, false, &llmtest.Reply{Delay: 3 * time.Second, Content: "{}"}, nil, "deterministic answer stands: llm timeout"},
		{"garbage", true, false, &llmtest.Reply{RawBody: "<html>"}, nil, "deterministic answer stands"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			if tt.reply != nil {
				srv.Enqueue(*tt.reply)
			}
			opts, out := newOptions(t, nil)
			opts.LogPath, opts.JSON, opts.NoLLM = path, true, tt.noLLM
			opts.Config = func() (*config.Config, error) {
				c := config.Default()
				c.LLM.Enabled = tt.enabled
				return c, nil
			}
			opts.LLM = func() (*llm.Client, error) {
				cfg := llm.DefaultConfig()
				cfg.Enabled, cfg.BaseURL, cfg.Model, cfg.MaxRetries, cfg.Timeout = true, srv.URL, llmtest.Model, 0, 300*time.Millisecond
				return llm.New(cfg, llm.Options{})
			}
			if err := opts.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			var r map[string]any
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			note, _ := r["llm_note"].(string)
			if r["step_time_s"] != tt.step || !strings.Contains(note, tt.noteHas) || (tt.noteHas == "") != (note == "") {
				t.Fatalf("report %v", r)
			}
			if tt.step != nil && r["source"] != "llm" {
				t.Fatalf("source %v", r["source"])
			}
		})
	}
}
