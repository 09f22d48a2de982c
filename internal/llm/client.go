package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Options carries a Client's collaborators; all are optional.
type Options struct {
	// Cache keeps answers by content hash; nil disables caching.
	Cache Cache
	// Audit is called for every call, after it ends.
	Audit AuditFunc
	// HTTPClient replaces the default HTTP client (tests, proxies).
	HTTPClient *http.Client
	// Getenv looks up the API key variable; nil means os.Getenv.
	Getenv func(string) string
}

// Client talks to one OpenAI-compatible server. It is safe for concurrent use.
type Client struct {
	cfg   Config
	api   *openai.Client
	cache Cache
	audit AuditFunc
	sem   chan struct{}
	meter meter
}

// New returns a Client for cfg, or ErrDisabled when cfg is not enabled.
func New(cfg Config, opts Options) (*Client, error) {
	if !cfg.Enabled {
		return nil, ErrDisabled
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	key, err := cfg.APIKey(opts.Getenv)
	if err != nil {
		return nil, err
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	oc := openai.DefaultConfig(key)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = boundedDoer{client: hc}
	return &Client{
		cfg:   cfg,
		api:   openai.NewClientWithConfig(oc),
		cache: opts.Cache,
		audit: opts.Audit,
		sem:   make(chan struct{}, cfg.Concurrency),
	}, nil
}

// Config returns the client's configuration.
func (c *Client) Config() Config { return c.cfg }

// Cache returns the client's answer cache, nil when it has none, so callers
// can keep results of their own (keyed with HashKey) next to its answers.
func (c *Client) Cache() Cache { return c.cache }

// Usage returns the tokens used by this client so far.
func (c *Client) Usage() Usage { return c.meter.get() }

// ChatRequest is one chat completion to ask.
type ChatRequest struct {
	// Purpose labels the call in audit records.
	Purpose string
	// Messages is the conversation; their text is redacted before sending.
	Messages []openai.ChatCompletionMessage
	// Tools the model may call.
	Tools []openai.Tool
	// Schema, when set, asks for a JSON answer (response_format json_schema).
	Schema *Schema
	// Temperature and Seed control sampling; both are part of the cache key.
	Temperature float32
	Seed        *int
	// MaxTokens overrides Config.MaxTokens when positive.
	MaxTokens int
	// NoCache skips the cache for this call.
	NoCache bool
}

// ChatResponse is the answer to a ChatRequest.
type ChatResponse struct {
	// Message is the assistant's message: text content or tool calls.
	Message openai.ChatCompletionMessage
	// FinishReason is why generation stopped.
	FinishReason openai.FinishReason
	// Usage is what this call cost; zero when Cached.
	Usage Usage
	// Cached is true when the answer came from the cache.
	Cached bool
	// Key is the answer's cache key.
	Key string
}

// cachedAnswer is the cache encoding of a chat answer.
type cachedAnswer struct {
	Message      openai.ChatCompletionMessage `json:"message"`
	FinishReason openai.FinishReason          `json:"finish_reason"`
}

// Chat sends req and returns the assistant's answer, from the cache when an
// identical request was answered before.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error) {
	oreq := c.wireRequest(req)
	key, err := HashKey("chat", oreq)
	if err != nil {
		return nil, err
	}
	if !req.NoCache {
		if resp, ok := c.lookup(key, req.Purpose, oreq); ok {
			return resp, nil
		}
	}
	resp, err := c.send(ctx, req.Purpose, oreq)
	if err != nil {
		return nil, err
	}
	resp.Key = key
	if !req.NoCache && resp.FinishReason != openai.FinishReasonLength {
		c.store(key, resp.Message, resp.FinishReason)
	}
	return resp, nil
}

// wireRequest builds the request as it goes on the wire, secrets redacted.
func (c *Client) wireRequest(req ChatRequest) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, len(req.Messages))
	for i, m := range req.Messages {
		m.Content = Redact(m.Content)
		msgs[i] = m
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.cfg.MaxTokens
	}
	oreq := openai.ChatCompletionRequest{
		Model:       c.cfg.Model,
		Messages:    msgs,
		MaxTokens:   maxTokens,
		Temperature: req.Temperature,
		Seed:        req.Seed,
		Tools:       req.Tools,
	}
	if req.Schema != nil {
		oreq.ResponseFormat = req.Schema.responseFormat()
	}
	return oreq
}

// lookup returns a cached answer for key.
func (c *Client) lookup(key, purpose string, oreq openai.ChatCompletionRequest) (*ChatResponse, bool) {
	if c.cache == nil {
		return nil, false
	}
	b, ok, err := c.cache.Get(key)
	if err != nil || !ok {
		return nil, false
	}
	var ans cachedAnswer
	if json.Unmarshal(b, &ans) != nil {
		return nil, false
	}
	u := Usage{CacheHits: 1}
	c.meter.add(u)
	c.record("chat", purpose, oreq, time.Now(), &ans.Message, u, true, 0, nil)
	return &ChatResponse{Message: ans.Message, FinishReason: ans.FinishReason, Usage: u, Cached: true, Key: key}, true
}

// store caches an answer; a failing cache only costs tokens later.
func (c *Client) store(key string, msg openai.ChatCompletionMessage, finish openai.FinishReason) {
	if c.cache == nil {
		return
	}
	b, err := json.Marshal(cachedAnswer{Message: msg, FinishReason: finish})
	if err != nil {
		return
	}
	_ = c.cache.Put(key, b)
}

// send performs the HTTP call with its deadline, concurrency slot and retries.
func (c *Client) send(ctx context.Context, purpose string, oreq openai.ChatCompletionRequest) (*ChatResponse, error) {
	start := time.Now()
	var out openai.ChatCompletionResponse
	err := c.do(ctx, "chat", func(ctx context.Context) error {
		var err error
		out, err = c.api.CreateChatCompletion(ctx, oreq)
		return err
	})
	if err == nil && len(out.Choices) == 0 {
		err = &Error{Op: "chat", Kind: KindBadAnswer, Err: errors.New("answer has no choices")}
	}
	u := Usage{Calls: 1, PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens, TotalTokens: out.Usage.TotalTokens}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	c.meter.add(u)
	if err != nil {
		c.record("chat", purpose, oreq, start, nil, u, false, time.Since(start), err)
		return nil, err
	}
	choice := out.Choices[0]
	c.record("chat", purpose, oreq, start, &choice.Message, u, false, time.Since(start), nil)
	return &ChatResponse{Message: choice.Message, FinishReason: choice.FinishReason, Usage: u}, nil
}

// do runs one HTTP exchange under the call deadline and a concurrency slot,
// retrying 429 and 5xx answers up to MaxRetries times. A Retry-After longer
// than MaxRetryWait, or past the deadline, ends the call at once.
func (c *Client) do(ctx context.Context, op string, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	select {
	case c.sem <- struct{}{}:
		defer func() { <-c.sem }()
	case <-ctx.Done():
		return &Error{Op: op, Kind: KindTimeout, Err: fmt.Errorf("waiting for a free slot: %w", ctx.Err())}
	}
	for attempt := 0; ; attempt++ {
		actx, info := withAttempt(ctx)
		err := classify(op, call(actx))
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return &Error{Op: op, Kind: KindTimeout, Err: fmt.Errorf("after %s: %w", c.cfg.Timeout, ctx.Err())}
		}
		if attempt >= c.cfg.MaxRetries || !retryable(err) {
			return err
		}
		wait := info.retryAfter
		if wait == 0 {
			wait = time.Duration(math.Pow(2, float64(attempt))) * 250 * time.Millisecond
		}
		if wait > c.cfg.MaxRetryWait {
			return err
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err
		}
		if sleep(ctx, wait) != nil {
			return err
		}
	}
}

// record hands an audit record to the audit hook.
func (c *Client) record(op, purpose string, body any, start time.Time, msg *openai.ChatCompletionMessage, u Usage, cached bool, d time.Duration, err error) {
	if c.audit == nil {
		return
	}
	rec := AuditRecord{
		Time: start, Op: op, Purpose: purpose, Endpoint: Redact(c.cfg.BaseURL), Model: c.cfg.Model,
		Usage: u, Cached: cached, Duration: d,
	}
	if b, jerr := json.Marshal(body); jerr == nil {
		rec.Request = truncate(Redact(string(b)), maxAuditBytes)
	}
	if msg != nil {
		rec.Answer = truncate(Redact(answerText(*msg)), maxAuditBytes)
	}
	if err != nil {
		rec.Err = Redact(err.Error())
	}
	c.audit(rec)
}

// maxAuditBytes bounds the request and answer text in one audit record.
const maxAuditBytes = 256 << 10

// answerText renders a message's content and tool calls as text.
func answerText(m openai.ChatCompletionMessage) string {
	s := m.Content
	for _, tc := range m.ToolCalls {
		s += fmt.Sprintf("\n[tool_call %s %s(%s)]", tc.ID, tc.Function.Name, tc.Function.Arguments)
	}
	return s
}

// Models lists the model ids the server offers.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	start := time.Now()
	var list openai.ModelsList
	err := c.do(ctx, "models", func(ctx context.Context) error {
		var err error
		list, err = c.api.ListModels(ctx)
		return err
	})
	c.record("models", "", struct{}{}, start, nil, Usage{Calls: 1}, false, time.Since(start), err)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		ids = append(ids, m.ID)
	}
	return ids, nil
}
