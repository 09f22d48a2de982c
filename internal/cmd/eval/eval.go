// Package eval implements `schedmate eval`: offline evaluations of
// schedmate's estimators on historical traces.
package eval

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/replay"
	"github.com/schedmate/schedmate/internal/trace"
)

// NewCmd returns the eval command group.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate schedmate's estimators on historical traces",
	}
	cmd.AddCommand(newEstimateCmd(f))
	return cmd
}

// estimateOptions are the flags of `eval estimate`.
type estimateOptions struct {
	tracePath   string
	format      string
	predictions string
	embedding   string
}

func newEstimateCmd(f *factory.Factory) *cobra.Command {
	o := &estimateOptions{}
	cmd := &cobra.Command{
		Use:   "estimate --trace FILE --format FORMAT",
		Short: "Replay a trace and score duration estimates against baselines",
		Long: `Replays a job trace in submit order. Every job is predicted using only
the jobs that had ended before it was submitted, by schedmate's advisor and
by baselines computed in the same run: the requested time limit (when the
trace has one), the mean of the user's last two jobs, the median of the
user's last five, the median of the same user and job name (and logical
name, when the trace has one) and the global median. Figures are over the
last half of the trace.

Formats: sacct (sacct -P output with a header), google (Google cluster-data
2011 per-job CSV), eagle (NREL Eagle CSV), swf (Standard Workload Format).

--embedding endpoint compares similar jobs by the vectors of the embedding
endpoint (llm.enabled and llm.embedding_model) instead of the built-in
embedding, as 'schedmate estimate' does once the history is embedded: every
job's description is embedded first, each distinct text once, and the
report adds the tokens it cost and the share of searches that compared
endpoint vectors. Run it beside the default to compare the two.`,
		Example: `  schedmate eval estimate --trace jobs.csv --format google
  schedmate eval estimate --trace jobs.csv --format google --embedding endpoint
  sacct -a -P -S 2024-01-01 -o JobID,User,JobName,Partition,Timelimit,Submit,Start,End,State > t.txt
  schedmate eval estimate --trace t.txt --format sacct --json --predictions pred.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEstimate(cmd, f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.tracePath, "trace", "", "trace file (- for stdin)")
	fl.StringVar(&o.format, "format", "", "trace format: "+strings.Join(trace.Formats, ", "))
	fl.StringVar(&o.predictions, "predictions", "", "write every job's predictions to this CSV file")
	fl.StringVar(&o.embedding, "embedding", embeddingBuiltin, "embedding similar jobs are compared by: builtin or endpoint")
	_ = cmd.MarkFlagRequired("trace")
	_ = cmd.MarkFlagRequired("format")
	return cmd
}

func runEstimate(cmd *cobra.Command, f *factory.Factory, o *estimateOptions) error {
	if o.embedding != embeddingBuiltin && o.embedding != embeddingEndpoint {
		return exitcode.Errorf(exitcode.Usage, "--embedding %q: want %s or %s", o.embedding, embeddingBuiltin, embeddingEndpoint)
	}
	jobs, err := readTrace(o.tracePath, o.format, f.IO.In)
	if err != nil {
		return err
	}
	opts := replay.Options{}
	var progress io.Writer
	if f.IO.IsStderrTTY() && !f.JSON {
		opts.Progress = progressBar(f.IO.ErrOut)
		progress = f.IO.ErrOut
	}
	sm, ep, err := advisorPredictor(cmd.Context(), f, o.embedding, jobs, progress)
	if err != nil {
		return err
	}
	preds := append([]replay.Predictor{sm}, replay.Baselines(jobs)...)
	var pw *predictionWriter
	if o.predictions != "" {
		if pw, err = newPredictionWriter(o.predictions, preds); err != nil {
			return err
		}
		opts.OnPrediction = func(j *trace.Job, p []float64) { pw.write(j, sm.Last(), p) }
	}
	start := time.Now()
	res, err := replay.Run(cmd.Context(), jobs, preds, opts)
	if pw != nil {
		if cerr := pw.close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	emb := embeddingFigures(ep, sm, res.Jobs)
	if f.JSON {
		return writeJSON(f.IO.Out, o, res, emb, time.Since(start))
	}
	return writeTable(f.IO.Out, o, res, emb)
}

// readTrace opens and parses a trace; bad input is a data error.
func readTrace(path, format string, stdin io.Reader) ([]trace.Job, error) {
	var r io.Reader = stdin
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.NotFound, "read trace: %w", err)
		}
		defer file.Close()
		r = file
	}
	jobs, err := trace.Read(r, format)
	if err != nil {
		code := exitcode.DataErr
		if errors.Is(err, trace.ErrUnknownFormat) {
			code = exitcode.Usage
		}
		return nil, exitcode.Errorf(code, "read trace %s: %w", path, err)
	}
	return jobs, nil
}

// report is the --json output.
type report struct {
	Trace    string                   `json:"trace"`
	Format   string                   `json:"format"`
	Jobs     int                      `json:"jobs"`
	Scored   int                      `json:"scored"`
	Methods  map[string]replay.Scores `json:"methods"`
	Best     string                   `json:"best_baseline"`
	Margin2x float64                  `json:"margin_within_2x"`
	ElapsedS float64                  `json:"elapsed_s"`
	// Embedding is set with --embedding endpoint.
	Embedding *embeddingReport `json:"embedding,omitempty"`
}

// embeddingReport describes a replay whose similarity search compared the
// embedding endpoint's vectors.
type embeddingReport struct {
	// Embedding labels the vectors, "endpoint:<model>".
	Embedding string `json:"embedding"`
	// Texts is how many distinct job descriptions were embedded.
	Texts int `json:"texts"`
	// Usage is the embedding's cost as the server counted it;
	// TokensPerJob spreads it over the trace's jobs.
	Usage        llm.Usage `json:"usage"`
	TokensPerJob float64   `json:"tokens_per_job"`
	// EndpointShare is the share of predictions whose similarity search
	// compared endpoint vectors (the others fell back to the built-in
	// embedding: too little of the history searched had one).
	EndpointShare float64 `json:"endpoint_share"`
}

// embeddingFigures describes the endpoint's part of a replay of jobs; nil
// for the built-in embedding.
func embeddingFigures(ep *endpointRun, sm *replay.AdvisorPredictor, jobs int) *embeddingReport {
	if ep == nil {
		return nil
	}
	return &embeddingReport{
		Embedding: advisor.EndpointLabel(ep.model), Texts: ep.texts, Usage: ep.usage,
		TokensPerJob:  math.Round(float64(ep.usage.TotalTokens)/float64(max(jobs, 1))*10) / 10,
		EndpointShare: math.Round(float64(sm.EndpointSearches())/float64(max(jobs, 1))*1000) / 1000,
	}
}

func writeJSON(w io.Writer, o *estimateOptions, res *replay.Result, emb *embeddingReport, elapsed time.Duration) error {
	best, margin := bestBaseline(res)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(report{
		Trace: o.tracePath, Format: o.format, Jobs: res.Jobs, Scored: res.Scored, Methods: res.Methods,
		Best: best, Margin2x: margin, ElapsedS: math.Round(elapsed.Seconds()*100) / 100, Embedding: emb,
	})
}

// bestBaseline names the baseline with the highest within-2x fraction and
// schedmate's margin over it, in points.
func bestBaseline(res *replay.Result) (string, float64) {
	best, bestW := "", -1.0
	for _, name := range res.Order {
		if name == "schedmate" {
			continue
		}
		if s := res.Methods[name]; s.Within2x > bestW {
			best, bestW = name, s.Within2x
		}
	}
	return best, math.Round((res.Methods["schedmate"].Within2x-bestW)*1000) / 10
}

func writeTable(w io.Writer, o *estimateOptions, res *replay.Result, emb *embeddingReport) error {
	fmt.Fprintf(w, "%s (%s): %d jobs, scored on the last %d\n\n", o.tracePath, o.format, res.Jobs, res.Scored)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "method\twithin 2x\twithin 100%\tmedian rel err\tMAE\tcoverage\t")
	for _, name := range res.Order {
		s := res.Methods[name]
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.1f%%\t%.3f\t%s\t%.1f%%\t\n", name, 100*s.Within2x, 100*s.Within100,
			s.MedianRelErr, advisor.FormatSeconds(s.MAESeconds), 100*s.Coverage)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	best, margin := bestBaseline(res)
	if _, err := fmt.Fprintf(w, "\nschedmate vs best baseline (%s): %+.1f points within 2x\n", best, margin); err != nil || emb == nil {
		return err
	}
	_, err := fmt.Fprintf(w, "similar jobs compared by %s in %.1f%% of searches; %d distinct descriptions embedded, %d tokens (%.1f per job)\n",
		emb.Embedding, 100*emb.EndpointShare, emb.Texts, emb.Usage.TotalTokens, emb.TokensPerJob)
	return err
}

// progressBar draws a one-line bar on a terminal.
func progressBar(w io.Writer) func(done, total int) {
	return func(done, total int) {
		const width = 40
		n := width * done / max(total, 1)
		fmt.Fprintf(w, "\r[%s%s] %3d%% %d/%d", strings.Repeat("=", n), strings.Repeat(" ", width-n), 100*done/max(total, 1), done, total)
		if done == total {
			fmt.Fprint(w, "\r\033[K")
		}
	}
}

// predictionWriter writes one CSV row per job.
type predictionWriter struct {
	file *os.File
	w    *bufio.Writer
	buf  []byte
}

func newPredictionWriter(path string, preds []replay.Predictor) (*predictionWriter, error) {
	file, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("write predictions: %w", err)
	}
	pw := &predictionWriter{file: file, w: bufio.NewWriterSize(file, 1<<16)}
	header := []string{"job_id", "predicted_s", "low_s", "high_s", "complete_s", "p_early", "source", "confidence", "actual_s", "state"}
	for _, p := range preds[1:] {
		header = append(header, p.Name()+"_s")
	}
	pw.w.WriteString(strings.Join(header, ",") + "\n")
	return pw, nil
}

func (pw *predictionWriter) write(j *trace.Job, e advisor.Estimate, p []float64) {
	b := pw.buf[:0]
	b = append(b, csvField(j.ID)...)
	for _, v := range []float64{p[0], e.LowS, e.HighS, e.CompleteS} {
		b = append(b, ',')
		b = appendNum(b, v)
	}
	b = append(b, ',')
	b = strconv.AppendFloat(b, e.PEarly, 'f', 3, 64)
	b = append(b, ',')
	b = append(b, e.Source...)
	b = append(b, ',')
	b = strconv.AppendFloat(b, e.Confidence, 'f', 3, 64)
	b = append(b, ',')
	b = appendNum(b, j.Duration())
	b = append(b, ',')
	b = append(b, csvField(j.State)...)
	for _, v := range p[1:] {
		b = append(b, ',')
		b = appendNum(b, v)
	}
	b = append(b, '\n')
	pw.w.Write(b)
	pw.buf = b
}

func (pw *predictionWriter) close() error {
	err := pw.w.Flush()
	if cerr := pw.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write predictions: %w", err)
	}
	return nil
}

// appendNum formats seconds with one decimal; no prediction is empty.
func appendNum(b []byte, v float64) []byte {
	if math.IsNaN(v) {
		return b
	}
	return strconv.AppendFloat(b, v, 'f', 1, 64)
}

// csvField quotes a field when it needs it.
func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}
