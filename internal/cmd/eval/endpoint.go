package eval

import (
	"context"
	"fmt"
	"io"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/replay"
	"github.com/schedmate/schedmate/internal/trace"
)

// The --embedding values.
const (
	embeddingBuiltin  = "builtin"
	embeddingEndpoint = "endpoint"
)

// embedChunk is how many distinct texts one Embed call is given (the client
// splits them into requests of its own batch size).
const embedChunk = 1024

// endpointRun is the embedding endpoint's part of a replay: every job's
// vector, and what computing them cost.
type endpointRun struct {
	model string
	vecs  map[*trace.Job][]int8
	texts int // distinct texts embedded
	usage llm.Usage
}

// vector returns a job's endpoint vector, nil when it has none.
func (r *endpointRun) vector(j *trace.Job) []int8 { return r.vecs[j] }

// advisorPredictor returns schedmate's advisor for the replay with the
// embedding --embedding names (validated); for the endpoint it first embeds
// every job's description, each distinct text once.
func advisorPredictor(ctx context.Context, f *factory.Factory, embedding string, jobs []trace.Job, progress io.Writer) (*replay.AdvisorPredictor, *endpointRun, error) {
	if embedding != embeddingEndpoint {
		return replay.Schedmate(advisor.DefaultOptions()), nil, nil
	}
	run, err := embedTrace(ctx, f, jobs, progress)
	if err != nil {
		return nil, nil, err
	}
	return replay.SchedmateEndpoint(advisor.DefaultOptions(), run.vector), run, nil
}

// embedTrace embeds the description of every job of a trace with the
// configured embedding model. Any failure ends the evaluation: figures
// from a partly embedded trace would compare nothing.
func embedTrace(ctx context.Context, f *factory.Factory, jobs []trace.Job, progress io.Writer) (*endpointRun, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	if !cfg.LLM.Enabled || cfg.LLM.EmbeddingModel == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "--embedding endpoint needs llm.enabled and llm.embedding_model")
	}
	// Texts are deduplicated by content here, so the answer cache only
	// needs to live as long as the run.
	client, err := f.LLMWithCache(llm.NewMemoryCache())
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	run := &endpointRun{model: cfg.LLM.EmbeddingModel, vecs: make(map[*trace.Job][]int8, len(jobs))}
	index := map[string]int{}
	var texts []string
	of := make([]int, len(jobs)) // jobs[i]'s text in texts; -1: none
	for i := range jobs {
		info := replay.JobInfo(&jobs[i])
		text := advisor.EmbeddingText(&info)
		of[i] = -1
		if text == "" {
			continue
		}
		k, ok := index[text]
		if !ok {
			k = len(texts)
			index[text] = k
			texts = append(texts, text)
		}
		of[i] = k
	}
	vecs := make([][]int8, len(texts))
	for start := 0; start < len(texts); start += embedChunk {
		if progress != nil {
			fmt.Fprintf(progress, "\rembedding %d/%d job descriptions", start, len(texts))
		}
		chunk := texts[start:min(start+embedChunk, len(texts))]
		got, err := client.Embed(ctx, chunk)
		if err != nil {
			return nil, factory.LLMError(fmt.Errorf("embed trace jobs: %w", err))
		}
		for i, v := range got {
			if vecs[start+i], err = advisor.QuantizeEndpoint(v); err != nil {
				return nil, exitcode.Errorf(exitcode.DataErr, "embed trace jobs: %w", err)
			}
		}
	}
	if progress != nil {
		fmt.Fprint(progress, "\r\033[K")
	}
	for i := range jobs {
		if of[i] >= 0 {
			run.vecs[&jobs[i]] = vecs[of[i]]
		}
	}
	run.texts, run.usage = len(texts), client.Usage()
	return run, nil
}
