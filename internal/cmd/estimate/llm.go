package estimate

import (
	"context"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llmassist"
)

// enrichMetadata lets the metadata agent fill the workload fields static
// extraction left empty, when llm.enabled is set and --no-llm is not, and
// returns the notes to print. The submit hook never does this.
func enrichMetadata(ctx context.Context, f *factory.Factory, req *advisor.SubmitRequest, noLLM bool) []string {
	if noLLM {
		return nil
	}
	cfg, err := f.Config()
	if err != nil || !cfg.LLM.Enabled {
		return nil
	}
	client, err := f.LLM()
	return llmassist.EnrichSubmit(ctx, client, err, req).Notes()
}

// embeddingEndpoint returns the embedding endpoint the similarity search may
// use and its client, whose Usage counts what embedding the job cost: nil
// unless llm.enabled and llm.embedding_model are set and --no-llm is not.
// A client that cannot be made leaves the built-in embedding, with a note
// that says why.
func embeddingEndpoint(f *factory.Factory, noLLM bool) (ep *advisor.Endpoint, client *llm.Client, note string) {
	if noLLM {
		return nil, nil, ""
	}
	cfg, err := f.Config()
	if err != nil || !cfg.LLM.Enabled || cfg.LLM.EmbeddingModel == "" {
		return nil, nil, ""
	}
	client, err = f.LLM()
	if err != nil {
		return nil, nil, "similar jobs compared by the built-in embedding: " + err.Error()
	}
	return &advisor.Endpoint{Model: cfg.LLM.EmbeddingModel, Embedder: client}, client, ""
}
