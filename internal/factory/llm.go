package factory

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/store"
)

// maxAuditPayload bounds the request and answer text kept in one audit entry.
const maxAuditPayload = 16 << 10

// LLM returns a client for the configured OpenAI-compatible endpoint, or
// llm.ErrDisabled when llm.enabled is false. Its answer cache lives in the
// history database and every call is written to the audit trail with secrets
// redacted; the database is opened only when the client makes its first
// call, and a database that cannot be opened only costs the cache and the
// audit, never the call. Each call returns a new client with its own token
// count. Hooks never call it: they must answer within Slurm's deadlines.
func (f *Factory) LLM() (*llm.Client, error) {
	return f.newLLM(func(kv *lazyStore) llm.Cache { return llm.KVCache{KV: kv} })
}

// LLMWithCache is LLM with its answers cached in cache (nil: not cached)
// instead of the history database, for batch work that keeps its results
// itself or would otherwise write one transaction per answer. Calls are
// still audited in the database.
func (f *Factory) LLMWithCache(cache llm.Cache) (*llm.Client, error) {
	return f.newLLM(func(*lazyStore) llm.Cache { return cache })
}

// newLLM builds a client whose answer cache cache returns, given the lazily
// opened database.
func (f *Factory) newLLM(cache func(*lazyStore) llm.Cache) (*llm.Client, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	lc := llm.FromConfig(cfg.LLM)
	if !lc.Enabled {
		return nil, llm.ErrDisabled
	}
	kv := &lazyStore{open: f.Store}
	c, err := llm.New(lc, llm.Options{Cache: cache(kv), Audit: kv.audit, Getenv: f.getenv})
	if err != nil {
		return nil, fmt.Errorf("llm client: %w", err)
	}
	return c, nil
}

// LLMError gives a failed LLM call the exit code it deserves: a timeout,
// a refusal of the configured model or key (usage), an unusable answer
// (data), or an endpoint that cannot be reached.
func LLMError(err error) error {
	switch llm.KindOf(err) {
	case "":
		return err
	case llm.KindTimeout:
		return exitcode.New(exitcode.Timeout, err)
	case llm.KindRejected, llm.KindDisabled:
		return exitcode.New(exitcode.Usage, err)
	case llm.KindBadAnswer:
		return exitcode.New(exitcode.DataErr, err)
	}
	return exitcode.New(exitcode.Unavailable, err)
}

// getenv looks a variable up in the factory's environment.
func (f *Factory) getenv(name string) string {
	prefix := name + "="
	for i := len(f.Environ) - 1; i >= 0; i-- {
		if kv := f.Environ[i]; len(kv) >= len(prefix) && kv[:len(prefix)] == prefix {
			return kv[len(prefix):]
		}
	}
	return ""
}

// lazyStore opens the history database on first use and remembers a
// failure, so an unavailable database is waited for once, not per call.
// Each use asks the factory for its handle of the moment, so that a command
// that releases the database between phases (letting hooks in) keeps its
// cache and audit.
type lazyStore struct {
	open func() (*store.Store, error)
	mu   sync.Mutex
	err  error
}

func (l *lazyStore) get() (*store.Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	st, err := l.open()
	l.err = err
	return st, err
}

// GetKV implements llm.KV.
func (l *lazyStore) GetKV(bucket, key string) ([]byte, bool, error) {
	st, err := l.get()
	if err != nil {
		return nil, false, err
	}
	return st.GetKV(bucket, key)
}

// PutKV implements llm.KV.
func (l *lazyStore) PutKV(bucket, key string, val []byte) error {
	st, err := l.get()
	if err != nil {
		return err
	}
	return st.PutKV(bucket, key, val)
}

// audit writes one LLM call to the audit trail; a database that cannot be
// written loses the entry, never the answer.
func (l *lazyStore) audit(rec llm.AuditRecord) {
	st, err := l.get()
	if err != nil {
		return
	}
	_, _ = st.Audit(auditEntry(rec))
}

// auditEntry turns an LLM call record (already redacted) into the audit
// trail's form, with its payloads bounded.
func auditEntry(rec llm.AuditRecord) store.AuditEntry {
	result := "ok"
	switch {
	case rec.Err != "":
		result = "error"
	case rec.Cached:
		result = "cached"
	}
	details := map[string]string{
		"endpoint":          rec.Endpoint,
		"duration":          rec.Duration.String(),
		"prompt_tokens":     strconv.Itoa(rec.Usage.PromptTokens),
		"completion_tokens": strconv.Itoa(rec.Usage.CompletionTokens),
		"request":           bound(rec.Request, maxAuditPayload),
	}
	if rec.Answer != "" {
		details["answer"] = bound(rec.Answer, maxAuditPayload)
	}
	return store.AuditEntry{
		Time: rec.Time, Actor: "llm", Action: "llm." + rec.Op, Target: rec.Model,
		Reason: rec.Purpose, Result: result, Err: rec.Err, Details: details,
	}
}

// bound cuts s to at most n bytes on a rune boundary, marking the cut.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
