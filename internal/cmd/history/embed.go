package history

import (
	"context"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/store"
)

// embedBatch is how many jobs one round embeds and stores: the database is
// held only while a round's vectors are written, never during a call.
const embedBatch = 256

// embedOptions are the flags of `history embed`.
type embedOptions struct {
	limit  int
	dryRun bool
}

// embedSummary is what one run did; the --json output.
type embedSummary struct {
	Model string `json:"model"`
	// Jobs counts the recorded jobs that ended and have a field to embed.
	Jobs int `json:"jobs"`
	// Current had a vector of their present description before the run.
	Current int `json:"current"`
	// Embedded got one in this run; Remaining still lack one.
	Embedded  int  `json:"embedded"`
	Remaining int  `json:"remaining"`
	DryRun    bool `json:"dry_run"`
	// Dimensions is the length of the vectors the endpoint returned.
	Dimensions int `json:"dimensions,omitempty"`
	// Usage is the run's token count as the server reported it.
	Usage        llm.Usage `json:"usage"`
	TokensPerJob float64   `json:"tokens_per_job"`
}

func newEmbedCmd(f *factory.Factory) *cobra.Command {
	o := &embedOptions{}
	cmd := &cobra.Command{
		Use:   "embed",
		Short: "Store the embedding endpoint's vectors of recorded jobs",
		Long: `Embeds the description of every recorded job that ended (its name, command
and arguments, workload fields, working directory's name, partition and
resources; never a file's content) with the endpoint's llm.embedding_model,
and stores the vectors beside the built-in index, under the model's name.
'schedmate estimate' then compares similar jobs by these vectors once most
of the jobs it searches have one.

Needs llm.enabled and llm.embedding_model. The hooks never call the
endpoint, so jobs recorded since the last run have no vector: run it
again, from cron for instance. Newest jobs are embedded first, in batches
stored as they arrive; a run that stops part way is resumed by the next,
and jobs whose vector is current are skipped, so running it again costs
nothing. Vectors of another model are ignored, never mixed; deleting them
only returns estimates to the built-in embedding.`,
		Example: `  schedmate history embed
  schedmate history embed --dry-run
  schedmate history embed --limit 500
  schedmate history embed --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.limit < 0 {
				return exitcode.Errorf(exitcode.Usage, "--limit must be 0 or more, not %d", o.limit)
			}
			return runEmbed(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&o.limit, "limit", "n", 0, "embed at most this many jobs, newest first; 0 for all")
	fl.BoolVar(&o.dryRun, "dry-run", false, "count the jobs that lack a vector without calling the endpoint")
	return cmd
}

func runEmbed(ctx context.Context, f *factory.Factory, o *embedOptions) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	model := cfg.LLM.EmbeddingModel
	if !cfg.LLM.Enabled || model == "" {
		return exitcode.Errorf(exitcode.Usage, "history embed needs llm.enabled and llm.embedding_model")
	}
	pending, sum, err := pendingJobs(f, model)
	if err != nil {
		return err
	}
	todo := pending
	if o.limit > 0 && len(todo) > o.limit {
		todo = todo[:o.limit]
	}
	sum.DryRun = o.dryRun
	var runErr error
	if !o.dryRun && len(todo) > 0 {
		runErr = embedJobs(ctx, f, model, todo, &sum)
	}
	sum.Remaining = len(pending) - sum.Embedded
	if sum.Embedded > 0 {
		sum.TokensPerJob = math.Round(float64(sum.Usage.TotalTokens)/float64(sum.Embedded)*10) / 10
	}
	if err := writeEmbedSummary(f, &sum, len(todo)); err != nil {
		return err
	}
	return runErr
}

// pendingJobs reads the recorded jobs and returns those lacking a current
// vector from model, newest first, with the counts so far. The database is
// released before any call to the endpoint.
func pendingJobs(f *factory.Factory, model string) ([]advisor.EndpointJob, embedSummary, error) {
	sum := embedSummary{Model: model}
	st, err := openForReading(f)
	if err != nil || st == nil {
		return nil, sum, factory.StoreError(err)
	}
	defer f.ReleaseStore()
	var jobs []*store.Job
	if err := st.ForEachJob(func(j *store.Job) error { jobs = append(jobs, j); return nil }); err != nil {
		return nil, sum, factory.StoreError(err)
	}
	pending, current, err := advisor.PendingEndpoint(st, model, jobs)
	if err != nil {
		return nil, sum, factory.StoreError(err)
	}
	sum.Jobs, sum.Current = len(pending)+current, current
	return pending, sum, nil
}

// embedJobs embeds jobs in batches and stores each batch's vectors as it
// arrives, holding the database only while writing. It stops at the first
// failure; what was stored stays.
func embedJobs(ctx context.Context, f *factory.Factory, model string, jobs []advisor.EndpointJob, sum *embedSummary) error {
	// Identical descriptions are embedded once; the vectors themselves are
	// kept by PutEndpoint, not in the answer cache.
	client, err := f.LLMWithCache(llm.NewMemoryCache())
	if err != nil {
		return exitcode.New(exitcode.Usage, err) // the llm section is unusable
	}
	defer func() { sum.Usage = client.Usage() }()
	progress := progressBar(f)
	for start := 0; start < len(jobs); start += embedBatch {
		batch := jobs[start:min(start+embedBatch, len(jobs))]
		texts := make([]string, len(batch))
		for i := range batch {
			texts[i] = batch[i].Text
		}
		vecs, err := client.Embed(ctx, texts)
		if err != nil {
			return factory.LLMError(fmt.Errorf("embed jobs: %w", err))
		}
		if err := storeBatch(f, model, batch, vecs); err != nil {
			return err
		}
		sum.Embedded += len(batch)
		sum.Dimensions = len(vecs[0])
		if progress != nil {
			progress(sum.Embedded, len(jobs))
		}
	}
	return nil
}

// storeBatch writes one batch's vectors, opening the database only for it.
func storeBatch(f *factory.Factory, model string, batch []advisor.EndpointJob, vecs [][]float32) error {
	st, err := f.Store()
	if err != nil {
		return factory.StoreError(err)
	}
	defer f.ReleaseStore()
	if err := advisor.PutEndpoint(st, model, batch, vecs); err != nil {
		return exitcode.New(exitcode.DataErr, err)
	}
	return nil
}

func writeEmbedSummary(f *factory.Factory, sum *embedSummary, todo int) error {
	if f.JSON {
		return writeJSON(f.IO.Out, sum)
	}
	var err error
	if sum.DryRun {
		_, err = fmt.Fprintf(f.IO.Out, "%d of %d jobs lack a vector from %s; a run would embed %d\n",
			sum.Remaining, sum.Jobs, sum.Model, todo)
		return err
	}
	_, err = fmt.Fprintf(f.IO.Out, "embedded %d jobs with %s (%d dimensions, %d tokens, %.1f per job); %d already had a vector, %d still lack one\n",
		sum.Embedded, sum.Model, sum.Dimensions, sum.Usage.TotalTokens, sum.TokensPerJob, sum.Current, sum.Remaining)
	return err
}
