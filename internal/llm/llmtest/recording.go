package llmtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Recording is one answer captured from a real server, replayed by key.
type Recording struct {
	// Key is RequestKey of the request that was answered.
	Key string `json:"key"`
	// Prompt is the request's last message, for people reading the file.
	Prompt string `json:"prompt"`
	// Reply is the answer.
	Reply Reply `json:"reply"`
}

// RequestKey identifies a chat request by its conversation and response
// schema, ignoring the model name and tool-call ids, so recordings replay
// against any model name.
func RequestKey(req *openai.ChatCompletionRequest) string {
	type call struct{ Name, Args string }
	type msg struct {
		Role, Content string
		Calls         []call
	}
	var parts struct {
		Messages []msg
		Schema   string
	}
	for _, m := range req.Messages {
		pm := msg{Role: m.Role, Content: m.Content}
		for _, tc := range m.ToolCalls {
			pm.Calls = append(pm.Calls, call{tc.Function.Name, tc.Function.Arguments})
		}
		parts.Messages = append(parts.Messages, pm)
	}
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		parts.Schema = rf.JSONSchema.Name
	}
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Replay makes the server answer requests whose RequestKey matches a recording.
func (s *Server) Replay(recs []Recording) {
	m := make(map[string]Reply, len(recs))
	for _, r := range recs {
		m[r.Key] = r.Reply
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replay = m
}

// RecordFrom makes the server forward requests it has no answer for to a
// real server at baseURL (ending in /v1) and keep the answers; the server
// then accepts any model name.
func (s *Server) RecordFrom(baseURL, apiKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record = &recorder{baseURL: strings.TrimRight(baseURL, "/"), apiKey: apiKey, recs: map[string]Recording{}}
	s.models = nil
}

// Recordings returns the answers recorded so far, sorted by key.
func (s *Server) Recordings() []Recording {
	s.mu.Lock()
	rec := s.record
	s.mu.Unlock()
	if rec == nil {
		return nil
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := make([]Recording, 0, len(rec.recs))
	for _, r := range rec.recs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// LoadRecordings reads recordings written by SaveRecordings.
func LoadRecordings(path string) ([]Recording, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read recordings: %w", err)
	}
	var recs []Recording
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("parse recordings %s: %w", path, err)
	}
	return recs, nil
}

// SaveRecordings writes recordings as indented JSON.
func SaveRecordings(path string, recs []Recording) error {
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return fmt.Errorf("encode recordings: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write recordings: %w", err)
	}
	return nil
}

type recorder struct {
	baseURL string
	apiKey  string
	mu      sync.Mutex
	recs    map[string]Recording
}

// forward sends the request upstream and records a successful answer.
func (r *recorder) forward(req *openai.ChatCompletionRequest, body []byte) (Reply, bool) {
	hreq, err := http.NewRequest(http.MethodPost, r.baseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return Reply{Status: http.StatusBadGateway, ErrorMessage: err.Error()}, true
	}
	hreq.Header.Set("Content-Type", "application/json")
	if r.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+r.apiKey)
	}
	client := &http.Client{Timeout: 5 * time.Minute}
	resp, err := client.Do(hreq)
	if err != nil {
		return Reply{Status: http.StatusBadGateway, ErrorMessage: err.Error()}, true
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRequestBytes))
	if err != nil || resp.StatusCode != http.StatusOK {
		return Reply{Status: http.StatusBadGateway, ErrorMessage: fmt.Sprintf("upstream %s: %s", resp.Status, b)}, true
	}
	var out openai.ChatCompletionResponse
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
		return Reply{Status: http.StatusBadGateway, ErrorMessage: fmt.Sprintf("upstream answer unreadable: %v", err)}, true
	}
	c := out.Choices[0]
	reply := Reply{Content: c.Message.Content, ToolCalls: c.Message.ToolCalls, FinishReason: c.FinishReason}
	r.mu.Lock()
	key := RequestKey(req)
	r.recs[key] = Recording{Key: key, Prompt: lastMessage(req), Reply: reply}
	r.mu.Unlock()
	return reply, true
}
