package llmtest

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func post(t *testing.T, url, body string) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	return resp, out
}

func TestChatValidation(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		msgHas     string
	}{
		{"not json", `{`, 400, "could not parse"},
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`, 400, "model"},
		{"no messages", `{"model":"test-model","messages":[]}`, 400, "at least one message"},
		{"bad role", `{"model":"test-model","messages":[{"role":"robot","content":"x"}]}`, 400, "invalid role"},
		{"unknown tool id", `{"model":"test-model","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c1","content":"y"}]}`, 400, "unknown tool_call_id"},
		{"unanswered tool call", `{"model":"test-model","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, 400, "must be answered"},
		{"schema without schema", `{"model":"test-model","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"v"}}}`, 400, "json_schema"},
		{"nameless tool", `{"model":"test-model","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":""}}]}`, 400, "tools[0]"},
		{"unknown model", `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, 404, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			resp, out := post(t, s.URL+"/chat/completions", tt.body)
			e, _ := out["error"].(map[string]any)
			if resp.StatusCode != tt.status || e == nil || !strings.Contains(e["message"].(string), tt.msgHas) {
				t.Errorf("status %d body %v", resp.StatusCode, out)
			}
		})
	}
}

func TestChatAnswerAndUsage(t *testing.T) {
	s := New(t)
	s.Enqueue(Reply{Content: "hello there"}, Reply{Status: 429, RetryAfter: 1500 * time.Millisecond})
	resp, out := post(t, s.URL+"/chat/completions", `{"model":"test-model","messages":[{"role":"user","content":"12345678"}]}`)
	if resp.StatusCode != 200 || out["object"] != "chat.completion" {
		t.Fatalf("answer %v", out)
	}
	u := s.Usage()
	if u.ChatCalls != 1 || u.PromptTokens != perMessageTokens+2 || u.CompletionTokens != CountTokens("hello there") || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v", u)
	}
	resp, out = post(t, s.URL+"/chat/completions", `{"model":"test-model","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || out["error"].(map[string]any)["type"] != "rate_limit_exceeded" {
		t.Errorf("rate limit answer: %d %q %v", resp.StatusCode, resp.Header.Get("Retry-After"), out)
	}
	if s.Pending() != 0 || s.Usage().ErrorAnswers != 1 {
		t.Errorf("pending %d usage %+v", s.Pending(), s.Usage())
	}
}

func TestAuthAndRoutes(t *testing.T) {
	s := New(t)
	s.RequireAPIKey("k")
	resp, _ := post(t, s.URL+"/chat/completions", `{}`)
	if resp.StatusCode != 401 {
		t.Errorf("no key: %d", resp.StatusCode)
	}
	resp, _ = post(t, s.URL+"/completions", `{}`)
	if resp.StatusCode != 404 {
		t.Errorf("unknown route: %d", resp.StatusCode)
	}
}

func TestEmbeddings(t *testing.T) {
	tests := []struct {
		name, body string
		status, n  int
	}{
		{"string", `{"model":"test-embed","input":"hello"}`, 200, 1},
		{"array", `{"model":"test-embed","input":["a","b","c"]}`, 200, 3},
		{"base64", `{"model":"test-embed","input":["a"],"encoding_format":"base64"}`, 200, 1},
		{"empty", `{"model":"test-embed","input":[]}`, 400, 0},
		{"empty string", `{"model":"test-embed","input":[""]}`, 400, 0},
		{"numbers", `{"model":"test-embed","input":[1,2]}`, 400, 0},
		{"unknown model", `{"model":"x","input":"a"}`, 404, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			resp, out := post(t, s.URL+"/embeddings", tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d: %v", resp.StatusCode, out)
			}
			if tt.status == 200 {
				if data := out["data"].([]any); len(data) != tt.n {
					t.Errorf("%d vectors", len(data))
				}
				if s.Usage().EmbeddingCalls != 1 {
					t.Errorf("usage %+v", s.Usage())
				}
			}
		})
	}
}

func TestEmbeddingFaults(t *testing.T) {
	s := New(t)
	s.EnqueueEmbeddings(
		Reply{Status: 429, RetryAfter: time.Second},
		Reply{RawBody: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,0,0]}]}`},
		Reply{},
	)
	body := `{"model":"test-embed","input":"hello"}`
	resp, out := post(t, s.URL+"/embeddings", body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("first answer: %d %v", resp.StatusCode, out)
	}
	for _, want := range []int{3, Dimensions, Dimensions} {
		_, out = post(t, s.URL+"/embeddings", body)
		if got := len(out["data"].([]any)[0].(map[string]any)["embedding"].([]any)); got != want {
			t.Errorf("vector of %d dimensions, want %d", got, want)
		}
	}
	if u := s.Usage(); u.EmbeddingCalls != 2 || u.ErrorAnswers != 1 {
		t.Errorf("usage %+v", u)
	}
}

func TestRecordAndReplay(t *testing.T) {
	upstream := New(t)
	upstream.SetModels("real-model")
	upstream.Enqueue(Reply{Content: "recorded answer"})
	rec := New(t)
	rec.RecordFrom(upstream.URL, "")
	body := `{"model":"real-model","messages":[{"role":"user","content":"classify this"}]}`
	if resp, out := post(t, rec.URL+"/chat/completions", body); resp.StatusCode != 200 {
		t.Fatalf("record: %d %v", resp.StatusCode, out)
	}
	path := filepath.Join(t.TempDir(), "recs.json")
	if err := SaveRecordings(path, rec.Recordings()); err != nil {
		t.Fatal(err)
	}
	recs, err := LoadRecordings(path)
	if err != nil || len(recs) != 1 || recs[0].Prompt != "classify this" {
		t.Fatalf("recordings %+v, %v", recs, err)
	}
	replay := New(t)
	replay.Replay(recs)
	_, out := post(t, replay.URL+"/chat/completions", `{"model":"test-model","messages":[{"role":"user","content":"classify this"}]}`)
	msg := out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["content"] != "recorded answer" {
		t.Errorf("replayed %v", out)
	}
	if _, err := LoadRecordings(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing recordings file accepted")
	}
}

func TestRequestKeyIgnoresModelAndIDs(t *testing.T) {
	a := &openai.ChatCompletionRequest{Model: "a", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"},
		{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "1", Function: openai.FunctionCall{Name: "f"}}}}, {Role: "tool", ToolCallID: "1", Content: "y"}}}
	b := &openai.ChatCompletionRequest{Model: "b", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"},
		{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "2", Function: openai.FunctionCall{Name: "f"}}}}, {Role: "tool", ToolCallID: "2", Content: "y"}}}
	if RequestKey(a) != RequestKey(b) {
		t.Error("keys differ by model or tool-call id")
	}
	b.Messages[2].Content = "z"
	if RequestKey(a) == RequestKey(b) {
		t.Error("keys equal for different conversations")
	}
}

func TestVectorDeterministicAndNormalised(t *testing.T) {
	v := Vector("Hello, world")
	w := Vector("hello world")
	var norm, dot float64
	for i := range v {
		norm += float64(v[i] * v[i])
		dot += float64(v[i] * w[i])
	}
	if norm < 0.999 || norm > 1.001 || dot < 0.999 {
		t.Errorf("norm %v dot %v", norm, dot)
	}
	if Vector("")[0] != 1 {
		t.Error("empty text has no unit vector")
	}
}
