// Package doctor implements `schedmate doctor`: checks that schedmate's
// optional services answer the way it needs them to.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/llm"
)

// NewCmd returns the doctor command group.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check schedmate's optional services",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newLLMCmd(f))
	return cmd
}

// LLMOptions are the inputs of `doctor llm`; empty fields keep the configuration's values.
type LLMOptions struct {
	BaseURL        string
	Model          string
	EmbeddingModel string
	Timeout        time.Duration
	JSON           bool
}

func newLLMCmd(f *factory.Factory) *cobra.Command {
	opts := LLMOptions{}
	cmd := &cobra.Command{
		Use:   "llm",
		Short: "Check the OpenAI-compatible LLM endpoint",
		Long: `Check the LLM endpoint configured in the llm section (or given by flags): the
model is served, a chat answers and how fast, json_schema answers validate,
tool calls come back well-formed, and embeddings work when an embedding model
is configured. The check runs even when llm.enabled is false, so an endpoint
can be verified before it is switched on.

Exit status: 0 when every check passes, 4 when the endpoint is unreachable,
7 when it is too slow, 8 when it answers but a check fails.`,
		Example: `  schedmate doctor llm
  schedmate doctor llm --base-url http://gpu01:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
  schedmate doctor llm --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			opts.JSON = f.JSON
			return runLLM(cmd.Context(), f.IO.Out, f.IO.ErrOut, opts, llm.FromConfig(cfg.LLM))
		},
	}
	cmd.Flags().StringVar(&opts.BaseURL, "base-url", "", "endpoint to check instead of llm.base_url")
	cmd.Flags().StringVar(&opts.Model, "model", "", "chat model to check instead of llm.model")
	cmd.Flags().StringVar(&opts.EmbeddingModel, "embedding-model", "", "embedding model to check instead of llm.embedding_model")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 0, "deadline for each call instead of llm.timeout")
	return cmd
}

// llmResult is what `doctor llm --json` prints.
type llmResult struct {
	Enabled bool `json:"enabled"`
	OK      bool `json:"ok"`
	*llm.ProbeReport
}

func runLLM(ctx context.Context, out, errOut io.Writer, opts LLMOptions, cfg llm.Config) error {
	enabled := cfg.Enabled
	cfg.Enabled = true
	if opts.BaseURL != "" {
		cfg.BaseURL = opts.BaseURL
	}
	if opts.Model != "" {
		cfg.Model = opts.Model
	}
	if opts.EmbeddingModel != "" {
		cfg.EmbeddingModel = opts.EmbeddingModel
	}
	if opts.Timeout > 0 {
		cfg.Timeout = opts.Timeout
	}
	client, err := llm.New(cfg, llm.Options{})
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	rep := llm.Probe(ctx, client)
	if opts.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(llmResult{Enabled: enabled, OK: rep.OK(), ProbeReport: rep}); err != nil {
			return err
		}
	} else if err := writeText(out, rep); err != nil {
		return err
	}
	if !enabled {
		fmt.Fprintln(errOut, "note: llm.enabled is false, so schedmate does not use this endpoint yet")
	}
	if rep.OK() {
		return nil
	}
	code := exitcode.CheckFailed
	switch rep.FirstFailure() {
	case llm.KindUnavailable:
		code = exitcode.Unavailable
	case llm.KindTimeout:
		code = exitcode.Timeout
	}
	return exitcode.Errorf(code, "llm endpoint %s failed its checks", rep.Endpoint)
}

func writeText(w io.Writer, rep *llm.ProbeReport) error {
	if _, err := fmt.Fprintf(w, "endpoint %s, model %s\n", rep.Endpoint, rep.Model); err != nil {
		return err
	}
	for _, c := range rep.Checks {
		latency := "-"
		if c.Status != llm.CheckSkip {
			latency = fmt.Sprintf("%dms", c.LatencyMS)
		}
		if _, err := fmt.Fprintf(w, "%-4s  %-17s  %7s  %s\n", c.Status, c.Name, latency, c.Detail); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "tokens used: %d\n", rep.Usage.TotalTokens)
	return err
}
