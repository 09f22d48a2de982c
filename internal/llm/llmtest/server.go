// Package llmtest runs an in-process HTTP server that speaks the OpenAI wire
// protocol (chat completions with tools and json_schema response formats,
// embeddings, model listing, error bodies, 429 with Retry-After, slow
// answers) for tests. Answers are scripted, computed by a responder, or
// replayed from recordings; every token is counted like a real server does.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Reply is one scripted answer to a chat request.
type Reply struct {
	// Content is the assistant's text.
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls the assistant makes; empty IDs are filled in.
	ToolCalls []openai.ToolCall `json:"tool_calls,omitempty"`
	// FinishReason defaults to "tool_calls" with tool calls, else "stop".
	FinishReason openai.FinishReason `json:"finish_reason,omitempty"`
	// Status, when not 0 or 200, answers with an OpenAI error body.
	Status int `json:"status,omitempty"`
	// ErrorMessage is the error body's message.
	ErrorMessage string `json:"error_message,omitempty"`
	// RetryAfter sets the Retry-After header (whole seconds, rounded up).
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Delay holds the answer back; a client that gives up first ends the wait.
	Delay time.Duration `json:"delay,omitempty"`
	// RawBody is sent verbatim instead of a protocol answer (garbage tests).
	RawBody string `json:"raw_body,omitempty"`
}

// Responder computes the answer to a chat request.
type Responder func(req *openai.ChatCompletionRequest) Reply

// Usage is the server's own token accounting.
type Usage struct {
	ChatCalls        int `json:"chat_calls"`
	EmbeddingCalls   int `json:"embedding_calls"`
	ErrorAnswers     int `json:"error_answers"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Server is a running fake OpenAI-compatible endpoint.
type Server struct {
	// URL is the base URL to configure clients with (ends in /v1).
	URL string

	t      testing.TB
	srv    *httptest.Server
	mu     sync.Mutex
	models []string
	apiKey string
	queue  []Reply
	embedQ []Reply
	resp   Responder
	replay map[string]Reply
	record *recorder
	usage  Usage
	reqs   []openai.ChatCompletionRequest
}

// Model is the model name the server offers by default.
const Model = "test-model"

// EmbeddingModel is the embedding model the server offers by default.
const EmbeddingModel = "test-embed"

// New starts a server that is closed when the test ends. It offers Model
// and EmbeddingModel and fails the test on a chat request it has no answer for.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, models: []string{Model, EmbeddingModel}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	mux.HandleFunc("GET /v1/models", s.listModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", fmt.Sprintf("Unknown request URL: %s %s", r.Method, r.URL.Path))
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// SetModels replaces the offered model names.
func (s *Server) SetModels(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = names
}

// RequireAPIKey makes the server answer 401 unless the bearer token is key.
func (s *Server) RequireAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
}

// Enqueue adds answers that are given, in order, before any other source.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Respond sets the responder used when neither the queue nor a recording answers.
func (s *Server) Respond(fn Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resp = fn
}

// Pending returns how many queued answers were not used.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Usage returns the token accounting so far.
func (s *Server) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

// Requests returns the chat requests received so far, decoded.
func (s *Server) Requests() []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), s.reqs...)
}

// maxRequestBytes bounds a request body.
const maxRequestBytes = 8 << 20

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	key := s.apiKey
	s.mu.Unlock()
	if key == "" || r.Header.Get("Authorization") == "Bearer "+key {
		return true
	}
	writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
	return false
}

// readRequest checks the caller's key and decodes the JSON body into dst,
// answering the error itself and returning false when either fails.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, dst any) ([]byte, bool) {
	if !s.authorized(w, r) {
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	if err != nil || len(body) > maxRequestBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "", "request body unreadable or too large")
		return nil, false
	}
	if err := json.Unmarshal(body, dst); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request: "+err.Error())
		return nil, false
	}
	return body, true
}

func (s *Server) hasModel(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.record != nil {
		return true
	}
	for _, m := range s.models {
		if m == name {
			return true
		}
	}
	return false
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	body, ok := s.readRequest(w, r, &req)
	if !ok {
		return
	}
	if err := validateChat(&req); err != nil {
		s.countError()
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	if !s.hasModel(req.Model) {
		s.countError()
		writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model))
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	reply, ok := s.answer(&req, body)
	if !ok {
		s.t.Errorf("llmtest: unexpected chat request, no answer scripted; last message: %q", lastMessage(&req))
		s.countError()
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "llmtest: no answer scripted for this request")
		return
	}
	s.serve(w, r, &req, reply)
}

// answer picks the reply: queue, replay, responder, then an upstream recording.
func (s *Server) answer(req *openai.ChatCompletionRequest, body []byte) (Reply, bool) {
	s.mu.Lock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return r, true
	}
	resp, replay, rec := s.resp, s.replay, s.record
	s.mu.Unlock()
	if r, ok := replay[RequestKey(req)]; ok {
		return r, true
	}
	if resp != nil {
		return resp(req), true
	}
	if rec != nil {
		return rec.forward(req, body)
	}
	return Reply{}, false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, req *openai.ChatCompletionRequest, reply Reply) {
	if s.fault(w, r, reply) {
		return
	}
	calls := make([]openai.ToolCall, len(reply.ToolCalls))
	for i, tc := range reply.ToolCalls {
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("call_%d_%d", len(req.Messages), i)
		}
		if tc.Type == "" {
			tc.Type = openai.ToolTypeFunction
		}
		idx := i
		tc.Index = &idx
		calls[i] = tc
	}
	finish := reply.FinishReason
	if finish == "" {
		finish = openai.FinishReasonStop
		if len(calls) > 0 {
			finish = openai.FinishReasonToolCalls
		}
	}
	prompt := promptTokens(req)
	completion := CountTokens(reply.Content)
	for _, tc := range calls {
		completion += CountTokens(tc.Function.Name) + CountTokens(tc.Function.Arguments)
	}
	s.mu.Lock()
	s.usage.ChatCalls++
	s.usage.PromptTokens += prompt
	s.usage.CompletionTokens += completion
	s.usage.TotalTokens += prompt + completion
	n := s.usage.ChatCalls
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, openai.ChatCompletionResponse{
		ID:      fmt.Sprintf("chatcmpl-%d", n),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   req.Model,
		Choices: []openai.ChatCompletionChoice{{
			Index:        0,
			Message:      openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: reply.Content, ToolCalls: calls},
			FinishReason: finish,
		}},
		Usage: openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion},
	})
}

// fault holds a reply back for its Delay, sets its Retry-After and answers
// its error status or raw body. It reports whether the answer is complete
// (or the client gave up), leaving only a protocol answer to write.
func (s *Server) fault(w http.ResponseWriter, r *http.Request, reply Reply) bool {
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return true
		case <-t.C:
		}
	}
	if reply.RetryAfter > 0 {
		secs := int((reply.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		s.countError()
		if reply.RawBody != "" {
			w.WriteHeader(reply.Status)
			_, _ = io.WriteString(w, reply.RawBody)
			return true
		}
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		writeError(w, reply.Status, errorType(reply.Status), "", msg)
		return true
	}
	if reply.RawBody != "" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply.RawBody)
		return true
	}
	return false
}

func (s *Server) countError() {
	s.mu.Lock()
	s.usage.ErrorAnswers++
	s.mu.Unlock()
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.mu.Lock()
	names := append([]string(nil), s.models...)
	s.mu.Unlock()
	list := openai.ModelsList{}
	for _, n := range names {
		list.Models = append(list.Models, openai.Model{ID: n, Object: "model", CreatedAt: 1700000000, OwnedBy: "llmtest"})
	}
	writeJSON(w, http.StatusOK, struct {
		Object string         `json:"object"`
		Data   []openai.Model `json:"data"`
	}{"list", list.Models})
}

func lastMessage(req *openai.ChatCompletionRequest) string {
	if len(req.Messages) == 0 {
		return ""
	}
	m := req.Messages[len(req.Messages)-1].Content
	if len(m) > 200 {
		m = m[:200]
	}
	return m
}

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	case status == http.StatusUnauthorized:
		return "authentication_error"
	}
	return "invalid_request_error"
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// validateChat applies the checks a real server makes before generating.
func validateChat(req *openai.ChatCompletionRequest) error {
	if req.Model == "" {
		return fmt.Errorf("you must provide a model parameter")
	}
	if len(req.Messages) == 0 {
		return fmt.Errorf("'messages' must contain at least one message")
	}
	if req.Stream {
		return fmt.Errorf("llmtest: streaming is not supported")
	}
	for i, t := range req.Tools {
		if t.Type != openai.ToolTypeFunction || t.Function == nil || t.Function.Name == "" {
			return fmt.Errorf("tools[%d]: a function tool needs type \"function\" and a name", i)
		}
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type == openai.ChatCompletionResponseFormatTypeJSONSchema {
		if rf.JSONSchema == nil || rf.JSONSchema.Name == "" || rf.JSONSchema.Schema == nil {
			return fmt.Errorf("response_format.json_schema needs a name and a schema")
		}
	}
	open := map[string]bool{}
	for i, m := range req.Messages {
		switch m.Role {
		case openai.ChatMessageRoleSystem, openai.ChatMessageRoleUser, openai.ChatMessageRoleDeveloper:
			if len(open) > 0 {
				return fmt.Errorf("messages[%d]: tool_calls %s must be answered by tool messages first", i, keys(open))
			}
		case openai.ChatMessageRoleAssistant:
			if len(open) > 0 {
				return fmt.Errorf("messages[%d]: tool_calls %s must be answered by tool messages first", i, keys(open))
			}
			for _, tc := range m.ToolCalls {
				open[tc.ID] = true
			}
		case openai.ChatMessageRoleTool:
			if !open[m.ToolCallID] {
				return fmt.Errorf("messages[%d]: tool message answers unknown tool_call_id %q", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			return fmt.Errorf("messages[%d]: invalid role %q", i, m.Role)
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("tool_calls %s must be answered by tool messages", keys(open))
	}
	return nil
}

func keys(m map[string]bool) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return strings.Join(ks, ",")
}
