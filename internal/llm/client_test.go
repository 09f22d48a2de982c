package llm_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
)

// newClient returns a client for srv with a memory cache and an audit log.
func newClient(t *testing.T, srv *llmtest.Server, edit func(*llm.Config)) (*llm.Client, *auditLog, *llm.MemoryCache) {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.Enabled = true
	cfg.BaseURL = srv.URL
	cfg.Model = llmtest.Model
	cfg.EmbeddingModel = llmtest.EmbeddingModel
	cfg.Timeout = 5 * time.Second
	if edit != nil {
		edit(&cfg)
	}
	log := &auditLog{}
	cache := llm.NewMemoryCache()
	c, err := llm.New(cfg, llm.Options{Cache: cache, Audit: log.add, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, log, cache
}

type auditLog struct {
	mu   sync.Mutex
	recs []llm.AuditRecord
}

func (a *auditLog) add(r llm.AuditRecord) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recs = append(a.recs, r)
}

func (a *auditLog) all() []llm.AuditRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]llm.AuditRecord(nil), a.recs...)
}

func user(s string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: s}
}

type verdict struct {
	Category  string  `json:"category" enum:"infrastructure,framework,script,other"`
	Component string  `json:"component"`
	Score     float64 `json:"score"`
}

func (v *verdict) Validate() error {
	if v.Score < 0 || v.Score > 1 {
		return errors.New("score must be within [0,1]")
	}
	return nil
}

func TestNewDisabled(t *testing.T) {
	_, err := llm.New(llm.DefaultConfig(), llm.Options{})
	if !errors.Is(err, llm.ErrDisabled) {
		t.Fatalf("err = %v, want ErrDisabled", err)
	}
	if got := llm.Note(err); !strings.Contains(got, "disabled") {
		t.Errorf("Note = %q", got)
	}
}

func TestChatToolRoundTrip(t *testing.T) {
	srv := llmtest.New(t)
	c, _, _ := newClient(t, srv, nil)
	srv.Enqueue(
		llmtest.Reply{ToolCalls: []openai.ToolCall{{Function: openai.FunctionCall{Name: "file_read", Arguments: `{"path":"train.py"}`}}}},
		llmtest.Reply{Content: "done"},
	)
	tools := []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: "file_read", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
	}}}
	msgs := []openai.ChatCompletionMessage{user("what model?")}
	resp, err := c.Chat(context.Background(), llm.ChatRequest{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) != 1 || resp.FinishReason != openai.FinishReasonToolCalls {
		t.Fatalf("want one tool call, got %+v", resp)
	}
	tc := resp.Message.ToolCalls[0]
	msgs = append(msgs, resp.Message, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Content: "import torch"})
	resp, err = c.Chat(context.Background(), llm.ChatRequest{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "done" {
		t.Errorf("content = %q", resp.Message.Content)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || len(reqs[1].Tools) != 1 || reqs[1].Messages[2].ToolCallID != tc.ID {
		t.Errorf("server saw %+v", reqs)
	}
}

func TestChatRejectsUnansweredToolCall(t *testing.T) {
	srv := llmtest.New(t)
	c, _, _ := newClient(t, srv, nil)
	msgs := []openai.ChatCompletionMessage{
		user("q"),
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "call_1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "f"}}}},
		user("again"),
	}
	_, err := c.Chat(context.Background(), llm.ChatRequest{Messages: msgs})
	if llm.KindOf(err) != llm.KindRejected {
		t.Fatalf("err = %v, want rejected", err)
	}
}

func TestDecode(t *testing.T) {
	schema, err := llm.SchemaFor[verdict]("verdict")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		replies   []llmtest.Reply
		want      verdict
		wantKind  llm.Kind
		wantCalls int
	}{
		{"valid", []llmtest.Reply{{Content: `{"category":"script","component":"oom","score":0.9}`}}, verdict{"script", "oom", 0.9}, "", 1},
		{"fenced with prose", []llmtest.Reply{{Content: "Here it is:\n```json\n{\"category\":\"framework\",\"component\":\"\",\"score\":1}\n```"}}, verdict{"framework", "", 1}, "", 1},
		{"repaired missing field", []llmtest.Reply{{Content: `{"category":"script"}`}, {Content: `{"category":"script","component":"x","score":0.5}`}}, verdict{"script", "x", 0.5}, "", 2},
		{"repaired enum", []llmtest.Reply{{Content: `{"category":"gpu","component":"x","score":0.5}`}, {Content: `{"category":"infrastructure","component":"gpu","score":0.5}`}}, verdict{"infrastructure", "gpu", 0.5}, "", 2},
		{"repaired range", []llmtest.Reply{{Content: `{"category":"other","component":"","score":7}`}, {Content: `{"category":"other","component":"","score":0.7}`}}, verdict{"other", "", 0.7}, "", 2},
		{"cut at token limit", []llmtest.Reply{{Content: `{"category":"other","component":"","score":0.7}`, FinishReason: openai.FinishReasonLength}, {Content: `{"category":"other","component":"","score":0.7}`}}, verdict{"other", "", 0.7}, "", 2},
		{"gives up after one repair", []llmtest.Reply{{Content: "no idea"}, {Content: `{"category":1}`}}, verdict{}, llm.KindBadAnswer, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			c, _, _ := newClient(t, srv, nil)
			srv.Enqueue(tt.replies...)
			got, u, err := llm.Decode[verdict](context.Background(), c, llm.ChatRequest{Messages: []openai.ChatCompletionMessage{user("classify")}}, schema)
			if llm.KindOf(err) != tt.wantKind {
				t.Fatalf("err = %v, want kind %q", err, tt.wantKind)
			}
			if tt.wantKind != "" {
				var se *llm.SchemaError
				if !errors.As(err, &se) {
					t.Errorf("err %T is not a *SchemaError", err)
				}
			} else if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if u.Calls != tt.wantCalls || srv.Usage().ChatCalls != tt.wantCalls {
				t.Errorf("calls: client %d, server %d, want %d", u.Calls, srv.Usage().ChatCalls, tt.wantCalls)
			}
			if u.TotalTokens != srv.Usage().TotalTokens {
				t.Errorf("client counted %d tokens, server %d", u.TotalTokens, srv.Usage().TotalTokens)
			}
			reqs := srv.Requests()
			rf := reqs[0].ResponseFormat
			if rf == nil || rf.Type != openai.ChatCompletionResponseFormatTypeJSONSchema || rf.JSONSchema.Name != "verdict" {
				t.Errorf("response_format = %+v", rf)
			}
			if tt.wantCalls == 2 {
				last := reqs[1].Messages[len(reqs[1].Messages)-1]
				if !strings.Contains(last.Content, "invalid") {
					t.Errorf("repair prompt = %q", last.Content)
				}
			}
		})
	}
}

func TestDecodeCachesOnlyValidAnswers(t *testing.T) {
	schema, _ := llm.SchemaFor[verdict]("verdict")
	srv := llmtest.New(t)
	c, log, _ := newClient(t, srv, nil)
	req := llm.ChatRequest{Messages: []openai.ChatCompletionMessage{user("classify")}}
	srv.Enqueue(llmtest.Reply{Content: "garbage"}, llmtest.Reply{Content: "garbage"})
	if _, _, err := llm.Decode[verdict](context.Background(), c, req, schema); err == nil {
		t.Fatal("want an error")
	}
	srv.Enqueue(llmtest.Reply{Content: `{"category":"script","component":"","score":1}`})
	if _, _, err := llm.Decode[verdict](context.Background(), c, req, schema); err != nil {
		t.Fatal(err)
	}
	before := srv.Usage()
	got, u, err := llm.Decode[verdict](context.Background(), c, req, schema)
	if err != nil || got.Category != "script" {
		t.Fatalf("cached decode = %+v, %v", got, err)
	}
	if srv.Usage() != before || u.TotalTokens != 0 || u.CacheHits != 1 {
		t.Errorf("cached answer cost tokens: server %+v -> %+v, usage %+v", before, srv.Usage(), u)
	}
	recs := log.all()
	if !recs[len(recs)-1].Cached {
		t.Errorf("last audit record not marked cached")
	}
}

func TestEmbed(t *testing.T) {
	srv := llmtest.New(t)
	c, _, _ := newClient(t, srv, nil)
	texts := []string{"llama 7b pretraining on the pile", "llama 7b pretraining on c4", "resnet50 imagenet"}
	vecs, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 3 || len(vecs[0]) != llmtest.Dimensions {
		t.Fatalf("got %d vectors of %d", len(vecs), len(vecs[0]))
	}
	if dot(vecs[0], vecs[1]) <= dot(vecs[0], vecs[2]) {
		t.Errorf("similar texts are not closer: %v vs %v", dot(vecs[0], vecs[1]), dot(vecs[0], vecs[2]))
	}
	calls := srv.Usage().EmbeddingCalls
	again, err := c.Embed(context.Background(), texts[:2])
	if err != nil || srv.Usage().EmbeddingCalls != calls {
		t.Fatalf("repeat embed reached the server (%v)", err)
	}
	if dot(again[0], vecs[0]) < 0.999 {
		t.Errorf("cached vector differs")
	}
}

func TestEmbedNeedsModel(t *testing.T) {
	srv := llmtest.New(t)
	c, _, _ := newClient(t, srv, func(c *llm.Config) { c.EmbeddingModel = "" })
	if _, err := c.Embed(context.Background(), []string{"x"}); llm.KindOf(err) != llm.KindRejected {
		t.Fatalf("err = %v", err)
	}
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestChatErrors(t *testing.T) {
	tests := []struct {
		name      string
		replies   []llmtest.Reply
		edit      func(*llm.Config)
		wantKind  llm.Kind
		wantCalls int
	}{
		{"server error retried then fails", []llmtest.Reply{{Status: 500}, {Status: 502}, {Status: 503}}, nil, llm.KindUnavailable, 3},
		{"server error then success", []llmtest.Reply{{Status: 503}, {Content: "ok"}}, nil, "", 2},
		{"html error page", []llmtest.Reply{{Status: 502, RawBody: "<html>Bad Gateway</html>"}}, func(c *llm.Config) { c.MaxRetries = 0 }, llm.KindUnavailable, 1},
		{"garbage body", []llmtest.Reply{{RawBody: "not json at all"}}, nil, llm.KindBadAnswer, 1},
		{"no choices", []llmtest.Reply{{RawBody: `{"id":"x","object":"chat.completion","choices":[]}`}}, nil, llm.KindBadAnswer, 1},
		{"bad request not retried", []llmtest.Reply{{Status: 400, ErrorMessage: "context length exceeded"}}, nil, llm.KindRejected, 1},
		{"rate limited with retry-after", []llmtest.Reply{{Status: 429, RetryAfter: time.Second}, {Content: "ok"}}, nil, "", 2},
		{"rate limited past max wait", []llmtest.Reply{{Status: 429, RetryAfter: time.Hour}}, nil, llm.KindRateLimited, 1},
		{"rate limited past deadline", []llmtest.Reply{{Status: 429, RetryAfter: 3 * time.Second}}, func(c *llm.Config) { c.Timeout = time.Second }, llm.KindRateLimited, 1},
		{"slow answer times out", []llmtest.Reply{{Content: "late", Delay: 10 * time.Second}}, func(c *llm.Config) { c.Timeout = 200 * time.Millisecond }, llm.KindTimeout, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			c, log, _ := newClient(t, srv, func(c *llm.Config) {
				c.MaxRetryWait = 2 * time.Second
				if tt.edit != nil {
					tt.edit(c)
				}
			})
			srv.Enqueue(tt.replies...)
			_, err := c.Chat(context.Background(), llm.ChatRequest{Messages: []openai.ChatCompletionMessage{user("hi")}, NoCache: true})
			if llm.KindOf(err) != tt.wantKind {
				t.Fatalf("err = %v, want kind %q", err, tt.wantKind)
			}
			if got := len(srv.Requests()); got != tt.wantCalls {
				t.Errorf("server saw %d requests, want %d", got, tt.wantCalls)
			}
			if recs := log.all(); len(recs) != 1 || (tt.wantKind != "") != (recs[0].Err != "") {
				t.Errorf("audit records = %+v", recs)
			}
			if tt.wantKind != "" && !strings.Contains(llm.Note(err), "deterministic answer stands") {
				t.Errorf("Note = %q", llm.Note(err))
			}
		})
	}
}

func TestUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.MaxRetries = true, "http://"+addr+"/v1", 0
	c, err := llm.New(cfg, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), llm.ChatRequest{Messages: []openai.ChatCompletionMessage{user("hi")}})
	if llm.KindOf(err) != llm.KindUnavailable {
		t.Fatalf("err = %v, want unavailable", err)
	}
}

func TestUnknownModelAndAuth(t *testing.T) {
	srv := llmtest.New(t)
	srv.RequireAPIKey("sk-test-0123456789abcdef")
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.Model = true, srv.URL, llmtest.Model
	c, err := llm.New(cfg, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Models(context.Background())
	if llm.KindOf(err) != llm.KindRejected || statusOf(err) != http.StatusUnauthorized {
		t.Fatalf("no key: err = %v", err)
	}
	cfg.Model = "no-such-model"
	c, err = llm.New(cfg, llm.Options{Getenv: func(string) string { return "sk-test-0123456789abcdef" }})
	if err != nil {
		t.Fatal(err)
	}
	models, err := c.Models(context.Background())
	if err != nil || len(models) != 2 {
		t.Fatalf("models = %v, %v", models, err)
	}
	_, err = c.Chat(context.Background(), llm.ChatRequest{Messages: []openai.ChatCompletionMessage{user("hi")}})
	if llm.KindOf(err) != llm.KindRejected || statusOf(err) != http.StatusNotFound {
		t.Fatalf("unknown model: err = %v", err)
	}
}

func statusOf(err error) int {
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Status
	}
	return 0
}

func TestSecretsNeverSent(t *testing.T) {
	srv := llmtest.New(t)
	c, log, _ := newClient(t, srv, nil)
	srv.Enqueue(llmtest.Reply{Content: "ok"})
	secret := "export WANDB_API_KEY=0123456789abcdef0123 && curl -H 'Authorization: Bearer abcdefghijklmnop123' https://u:hunter2@example.com"
	if _, err := c.Chat(context.Background(), llm.ChatRequest{Messages: []openai.ChatCompletionMessage{user(secret)}}); err != nil {
		t.Fatal(err)
	}
	sent := srv.Requests()[0].Messages[0].Content
	for _, s := range []string{"0123456789abcdef0123", "abcdefghijklmnop123", "hunter2"} {
		if strings.Contains(sent, s) || strings.Contains(log.all()[0].Request, s) {
			t.Errorf("secret %q left the host: %q", s, sent)
		}
	}
}

func TestConcurrencyLimit(t *testing.T) {
	srv := llmtest.New(t)
	c, _, _ := newClient(t, srv, func(c *llm.Config) { c.Concurrency = 1 })
	var mu sync.Mutex
	inFlight, peak := 0, 0
	srv.Respond(func(*openai.ChatCompletionRequest) llmtest.Reply {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return llmtest.Reply{Content: "ok"}
	})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Chat(context.Background(), llm.ChatRequest{Messages: []openai.ChatCompletionMessage{user("q")}, NoCache: true}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if peak != 1 {
		t.Errorf("%d calls in flight with concurrency 1", peak)
	}
}

func TestConfigValidate(t *testing.T) {
	base := llm.DefaultConfig()
	base.Enabled = true
	tests := []struct {
		name string
		edit func(*llm.Config)
		ok   bool
	}{
		{"defaults", func(*llm.Config) {}, true},
		{"disabled with nonsense", func(c *llm.Config) { c.Enabled = false; c.BaseURL = "::" }, true},
		{"empty url", func(c *llm.Config) { c.BaseURL = "" }, false},
		{"ftp url", func(c *llm.Config) { c.BaseURL = "ftp://x/v1" }, false},
		{"no host", func(c *llm.Config) { c.BaseURL = "http:///v1" }, false},
		{"no model", func(c *llm.Config) { c.Model = "" }, false},
		{"zero timeout", func(c *llm.Config) { c.Timeout = 0 }, false},
		{"zero concurrency", func(c *llm.Config) { c.Concurrency = 0 }, false},
		{"zero max tokens", func(c *llm.Config) { c.MaxTokens = 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.edit(&cfg)
			if err := cfg.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestAPIKey(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "key")
	os.WriteFile(good, []byte("  sk-from-file \nignored\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	env := func(name string) string {
		if name == "MY_KEY" {
			return "sk-from-env"
		}
		return ""
	}
	tests := []struct {
		name    string
		cfg     llm.Config
		want    string
		wantErr bool
	}{
		{"file", llm.Config{APIKeyFile: good, APIKeyEnv: "MY_KEY"}, "sk-from-file", false},
		{"env", llm.Config{APIKeyEnv: "MY_KEY"}, "sk-from-env", false},
		{"none", llm.Config{}, "", false},
		{"missing file", llm.Config{APIKeyFile: filepath.Join(dir, "nope")}, "", true},
		{"empty file", llm.Config{APIKeyFile: empty}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.APIKey(env)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("APIKey() = %q, %v", got, err)
			}
		})
	}
}
