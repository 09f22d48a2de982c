// Package advisortest helps tests give a history the vectors of an
// embedding endpoint, as `schedmate history embed` would.
package advisortest

import (
	"context"
	"testing"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
	"github.com/schedmate/schedmate/internal/store"
)

// EmbedAll embeds every ended job among jobs, already indexed in kv, with
// the embedding model of the test server at url, and stores the vectors.
func EmbedAll(t *testing.T, kv advisor.KV, url string, jobs []*store.Job) {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.EmbeddingModel = true, url, llmtest.EmbeddingModel
	client, err := llm.New(cfg, llm.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	pending, _, err := advisor.PendingEndpoint(kv, llmtest.EmbeddingModel, jobs)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(pending))
	for i := range pending {
		texts[i] = pending[i].Text
	}
	vecs, err := client.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if err := advisor.PutEndpoint(kv, llmtest.EmbeddingModel, pending, vecs); err != nil {
		t.Fatal(err)
	}
}
