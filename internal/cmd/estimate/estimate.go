// Package estimate implements `schedmate estimate`: the duration and
// resource estimate of a batch script before it is submitted.
package estimate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/fingerprint"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/store"
)

// NewCmd returns the estimate command.
func NewCmd(f *factory.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "estimate [sbatch options] SCRIPT [args...]",
		Short: "Estimate how long a batch script will run, from similar past jobs",
		Long: `Fingerprints the batch script (its #SBATCH options, launch command, entry
script, config files and git branch), retrieves similar ended jobs from the
history and prints the expected run time with a low-high range, the
probability that the job ends early, and where the estimate came from.

Takes the same options as sbatch, which override the script's #SBATCH lines.
When llm.enabled is set, a metadata agent also reads the job's working
directory for workload fields the script does not state (cached, so an
unchanged resubmission costs no tokens); --no-llm skips it.

When llm.embedding_model is set too, similar jobs are compared by the
embedding endpoint's vectors instead of the built-in embedding, once
'schedmate history embed' has stored vectors for most of the jobs searched:
the job's description (command, arguments, workload fields, resources) is
embedded within llm.timeout. If the endpoint fails, is slow, or its vectors
do not match the stored ones, the built-in embedding is used and a note
says why. "Embedding" (JSON: "embedding") names the vectors compared.`,
		Example: `  schedmate estimate train.sbatch
  schedmate estimate -p gpu --time=4:00:00 train.sbatch --lr 3e-4
  schedmate estimate --json train.sbatch`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			args, asJSON, help, noLLM := ownFlags(args)
			if help {
				return cmd.Help()
			}
			req, err := Request(args)
			if err != nil {
				return err
			}
			notes := enrichMetadata(cmd.Context(), f, &req, noLLM)
			ep, client, note := embeddingEndpoint(f, noLLM)
			req.Endpoint = ep
			adv, err := Run(cmd.Context(), f, req)
			if err != nil {
				return err
			}
			adv.Notes = append(adv.Notes, notes...)
			if note != "" {
				adv.Embedding = advisor.EmbeddingBuiltin
				adv.Notes = append(adv.Notes, note)
			}
			var usage *llm.Usage
			if client != nil {
				u := client.Usage()
				usage = &u
			}
			if asJSON || f.JSON {
				return WriteJSON(f.IO.Out, adv, usage)
			}
			return writeText(f.IO.Out, adv, usage)
		},
	}
}

// ownFlags takes schedmate's own flags (--json, --help, --no-llm) out of an
// sbatch command line.
func ownFlags(args []string) (rest []string, asJSON, help, noLLM bool) {
	for i, a := range args {
		switch a {
		case "--json":
			asJSON = true
			continue
		case "-h", "--help":
			help = true
			continue
		case "--no-llm":
			noLLM = true
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "--" {
			return append(rest, args[i:]...), asJSON, help, noLLM
		}
		rest = append(rest, a)
	}
	return rest, asJSON, help, noLLM
}

// Request builds the advisor's request from an sbatch command line.
func Request(args []string) (advisor.SubmitRequest, error) {
	sa, err := fingerprint.ParseSbatchArgs(args)
	if err != nil {
		return advisor.SubmitRequest{}, exitcode.New(exitcode.Usage, err)
	}
	script, err := filepath.Abs(sa.Script)
	if err != nil {
		return advisor.SubmitRequest{}, exitcode.New(exitcode.Usage, err)
	}
	if fi, err := os.Stat(script); err != nil {
		return advisor.SubmitRequest{}, exitcode.Errorf(exitcode.NotFound, "batch script: %w", err)
	} else if !fi.Mode().IsRegular() {
		return advisor.SubmitRequest{}, exitcode.Errorf(exitcode.DataErr, "batch script %s is not a regular file", sa.Script)
	}
	workDir := sa.Options["chdir"]
	if workDir == "" {
		if workDir, err = os.Getwd(); err != nil {
			return advisor.SubmitRequest{}, fmt.Errorf("working directory: %w", err)
		}
	}
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return advisor.SubmitRequest{
		Job:     advisor.JobInfo{User: name, WorkDir: workDir},
		Script:  script,
		Args:    sa.ScriptArgs,
		Options: sa.Options,
	}, nil
}

// Run estimates a request against the configured history (none when no
// database exists yet). The database is opened read-only: the version cache
// is only written by the submit hook.
func Run(ctx context.Context, f *factory.Factory, req advisor.SubmitRequest) (*advisor.SubmitAdvice, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	var kv advisor.KV = advisor.NoHistory
	_, err = f.StoreReadOnly()
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, factory.StoreError(err)
	default:
		kv = readOnly{f}
	}
	opts, pol := advisor.FromConfig(cfg.Advisor)
	adv, err := advisor.ForSubmit(ctx, kv, req, pol, opts)
	if err != nil {
		return nil, fmt.Errorf("estimate %s: %w", req.Script, err)
	}
	if adv.Fingerprint == nil {
		return nil, exitcode.Errorf(exitcode.DataErr, "estimate %s: %s", req.Script, strings.Join(adv.Notes, "; "))
	}
	return adv, nil
}

// readOnly reads the history through the factory's handle of the moment
// (an LLM call may reopen the database read-write for its cache and audit,
// closing the read-only handle) and hides writes: the estimate command
// never fills the version cache or the index.
type readOnly struct{ f *factory.Factory }

// GetKV implements advisor.KV.
func (r readOnly) GetKV(bucket, key string) ([]byte, bool, error) {
	st, err := r.f.StoreReadOnly()
	if err != nil {
		return nil, false, err
	}
	return st.GetKV(bucket, key)
}

// ScanKVReverse implements advisor.KV.
func (r readOnly) ScanKVReverse(bucket, prefix string, fn func(k string, v []byte) error) error {
	st, err := r.f.StoreReadOnly()
	if err != nil {
		return err
	}
	return st.ScanKVReverse(bucket, prefix, fn)
}

// BatchKV implements advisor.KV by discarding the write.
func (readOnly) BatchKV(string, func(func(string, []byte) error) error) error { return nil }

// AppendKV implements advisor.KV by discarding the write.
func (readOnly) AppendKV(string, func(store.KVWriter) error) error { return nil }

// jsonAdvice is the --json form: the estimate's fields at top level.
type jsonAdvice struct {
	advisor.Estimate
	Fingerprint *fingerprint.Fingerprint `json:"fingerprint,omitempty"`
	Cached      bool                     `json:"cached"`
	// Embedding and EmbeddingUsage are set when an embedding endpoint is
	// configured: the vectors the similarity search compared, and what
	// embedding the job cost, as the server counted it.
	Embedding      string     `json:"embedding,omitempty"`
	EmbeddingUsage *llm.Usage `json:"embedding_usage,omitempty"`
	Notes          []string   `json:"notes,omitempty"`
}

// WriteJSON prints an advice as one JSON object, with the embedding
// endpoint's usage when one was configured (nil otherwise).
func WriteJSON(w io.Writer, adv *advisor.SubmitAdvice, usage *llm.Usage) error {
	out := jsonAdvice{Estimate: adv.Estimate, Fingerprint: adv.Fingerprint, Cached: adv.Cached,
		Embedding: adv.Embedding, EmbeddingUsage: usage, Notes: adv.Notes}
	if out.Matches == nil {
		out.Matches = []advisor.Match{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeText prints an advice for people.
func writeText(w io.Writer, adv *advisor.SubmitAdvice, usage *llm.Usage) error {
	e := adv.Estimate
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if e.Source == advisor.SourceNone {
		fmt.Fprintln(tw, "Estimate:\tunknown (no history and no time limit)")
	} else {
		fmt.Fprintf(tw, "Estimate:\t%s (range %s - %s)\n", advisor.FormatSeconds(e.EstimateS),
			advisor.FormatSeconds(e.LowS), advisor.FormatSeconds(e.HighS))
		fmt.Fprintf(tw, "If it completes:\t%s (%.0f%% chance it ends early)\n", advisor.FormatSeconds(e.CompleteS), 100*e.PEarly)
		fmt.Fprintf(tw, "Source:\t%s, confidence %.2f\n", e.Source, e.Confidence)
	}
	if e.GPUUtil != nil {
		fmt.Fprintf(tw, "GPU utilisation:\t%.0f%%\n", *e.GPUUtil)
	}
	if e.GPUMemGB != nil {
		fmt.Fprintf(tw, "GPU memory:\t%.1f GiB\n", *e.GPUMemGB)
	}
	if e.StepTimeS != nil {
		fmt.Fprintf(tw, "Step time:\t%.3fs\n", *e.StepTimeS)
	}
	if fp := adv.Fingerprint; fp != nil && fp.Text() != "" {
		fmt.Fprintf(tw, "Workload:\t%s\n", fp.Text())
	}
	if adv.Embedding != "" {
		fmt.Fprintf(tw, "Embedding:\t%s\n", adv.Embedding)
	}
	if usage != nil && usage.TotalTokens > 0 {
		fmt.Fprintf(tw, "Embedding tokens:\t%d\n", usage.TotalTokens)
	}
	for i, m := range e.Matches {
		label := ""
		if i == 0 {
			label = "Similar jobs:"
		}
		fmt.Fprintf(tw, "%s\t%s  similarity %.3f  ran %s (%s)\n", label, m.JobID, m.Similarity, advisor.FormatSeconds(m.DurationS), m.State)
	}
	for _, n := range adv.Notes {
		fmt.Fprintf(tw, "Note:\t%s\n", n)
	}
	return tw.Flush()
}
