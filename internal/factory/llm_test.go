package factory

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
)

func TestLLMError(t *testing.T) {
	tests := []struct {
		err  error
		want exitcode.Code
	}{
		{&llm.Error{Op: "embeddings", Kind: llm.KindTimeout}, exitcode.Timeout},
		{fmt.Errorf("embed: %w", &llm.Error{Kind: llm.KindRejected}), exitcode.Usage},
		{llm.ErrDisabled, exitcode.Usage},
		{&llm.Error{Kind: llm.KindBadAnswer}, exitcode.DataErr},
		{&llm.Error{Kind: llm.KindRateLimited}, exitcode.Unavailable},
		{&llm.Error{Kind: llm.KindUnavailable}, exitcode.Unavailable},
		{errors.New("other"), exitcode.Error},
	}
	for _, tt := range tests {
		if got := exitcode.Of(LLMError(tt.err)); got != tt.want {
			t.Errorf("LLMError(%v) code = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestLLMWithCacheKeepsAnswersOutOfTheDatabase(t *testing.T) {
	srv := llmtest.New(t)
	f, _ := newTestFactory(t)
	f.Environ = append(f.Environ, "SCHEDMATE_LLM_ENABLED=true", "SCHEDMATE_LLM_BASE_URL="+srv.URL,
		"SCHEDMATE_LLM_EMBEDDING_MODEL="+llmtest.EmbeddingModel)
	defer f.Close()
	embed := func(c *llm.Client) {
		t.Helper()
		if _, err := c.Embed(context.Background(), []string{"resnet50 imagenet"}); err != nil {
			t.Fatal(err)
		}
	}
	cached, err := f.LLMWithCache(llm.NewMemoryCache())
	if err != nil {
		t.Fatal(err)
	}
	embed(cached)
	embed(cached)
	uncached, err := f.LLMWithCache(nil)
	if err != nil {
		t.Fatal(err)
	}
	embed(uncached)
	if n := srv.Usage().EmbeddingCalls; n != 2 {
		t.Errorf("%d embedding calls, want 2 (one cached, one without a cache)", n)
	}
	st, err := f.Store()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.GetKV(llm.CacheBucket, mustKey(t)); ok {
		t.Error("the answer went to the database cache")
	}
	entries, err := st.AuditEntries(time.Time{}, 0)
	if err != nil || len(entries) != 2 {
		t.Errorf("%d audit entries (%v), want one per call", len(entries), err)
	}
}

func mustKey(t *testing.T) string {
	t.Helper()
	k, err := llm.HashKey("embed", llmtest.EmbeddingModel, "resnet50 imagenet")
	if err != nil {
		t.Fatal(err)
	}
	return k
}
