package llm

import (
	"sync"
	"time"
)

// Usage counts tokens as the server reported them.
type Usage struct {
	// Calls is the number of HTTP calls that reached the server.
	Calls int `json:"calls"`
	// CacheHits is the number of answers served from the cache.
	CacheHits int `json:"cache_hits"`
	// PromptTokens, CompletionTokens and TotalTokens are the server's counts.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Calls:            u.Calls + v.Calls,
		CacheHits:        u.CacheHits + v.CacheHits,
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
	}
}

// meter accumulates Usage across goroutines.
type meter struct {
	mu    sync.Mutex
	total Usage
}

func (m *meter) add(u Usage) {
	m.mu.Lock()
	m.total = m.total.Add(u)
	m.mu.Unlock()
}

func (m *meter) get() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

// AuditRecord describes one call as it was sent, with secrets redacted.
type AuditRecord struct {
	// Time is when the call started.
	Time time.Time `json:"time"`
	// Op is "chat", "embeddings" or "models".
	Op string `json:"op"`
	// Purpose is the caller's label, e.g. "metaagent" or "refine-failure".
	Purpose string `json:"purpose,omitempty"`
	// Endpoint is the server's base URL with any credentials redacted.
	Endpoint string `json:"endpoint"`
	// Model is the model asked.
	Model string `json:"model"`
	// Request is the JSON body that was sent, redacted.
	Request string `json:"request"`
	// Answer is the answer text or tool calls, redacted and bounded.
	Answer string `json:"answer,omitempty"`
	// Usage is this call's token count (zero when cached).
	Usage Usage `json:"usage"`
	// Cached is true when the answer came from the cache.
	Cached bool `json:"cached,omitempty"`
	// Duration is how long the call took.
	Duration time.Duration `json:"duration"`
	// Err is the failure, if any.
	Err string `json:"err,omitempty"`
}

// AuditFunc receives a record of every call, including cache hits and failures.
type AuditFunc func(AuditRecord)
