package llmtest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"unicode"

	openai "github.com/sashabaranov/go-openai"
)

// Dimensions is the length of the vectors the server returns.
const Dimensions = 64

// Vector is the server's deterministic embedding of text: a normalised
// hashed bag of lower-cased words, so texts sharing words are close.
func Vector(text string) []float32 {
	v := make([]float32, Dimensions)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		h := fnv.New32a()
		_, _ = h.Write([]byte(w))
		sum := h.Sum32()
		sign := float32(1)
		if sum&1 == 1 {
			sign = -1
		}
		v[(sum>>1)%Dimensions] += sign
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 {
		v[0] = 1
		return v
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
	return v
}

type embeddingRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	EncodingFormat string          `json:"encoding_format"`
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingRequest
	if _, ok := s.readRequest(w, r, &req); !ok {
		return
	}
	inputs, err := embeddingInputs(req.Input)
	if err != nil {
		s.countError()
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	if !s.hasModel(req.Model) {
		s.countError()
		writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model))
		return
	}
	if reply, ok := s.nextEmbedding(); ok && s.fault(w, r, reply) {
		return
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]item, len(inputs))
	tokens := 0
	for i, text := range inputs {
		tokens += CountTokens(text)
		vec := Vector(text)
		var enc any = vec
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(vec))
			for j, x := range vec {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			enc = base64.StdEncoding.EncodeToString(b)
		}
		data[i] = item{Object: "embedding", Index: i, Embedding: enc}
	}
	s.mu.Lock()
	s.usage.EmbeddingCalls++
	s.usage.PromptTokens += tokens
	s.usage.TotalTokens += tokens
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   data,
		"model":  req.Model,
		"usage":  openai.Usage{PromptTokens: tokens, TotalTokens: tokens},
	})
}

// EnqueueEmbeddings adds answers to embedding requests that are given, in
// order, before the computed vectors: an error status (with Retry-After),
// a Delay, or a RawBody sent verbatim (garbage, vectors of other
// dimensions). A reply with none of these lets the vectors be computed.
func (s *Server) EnqueueEmbeddings(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedQ = append(s.embedQ, replies...)
}

// nextEmbedding takes the next queued embedding answer, if any.
func (s *Server) nextEmbedding() (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.embedQ) == 0 {
		return Reply{}, false
	}
	r := s.embedQ[0]
	s.embedQ = s.embedQ[1:]
	return r, true
}

// embeddingInputs accepts a string or an array of non-empty strings.
func embeddingInputs(raw json.RawMessage) ([]string, error) {
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		raw, _ = json.Marshal([]string{one})
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("'input' must be a string or an array of strings")
	}
	if len(many) == 0 {
		return nil, fmt.Errorf("'input' must not be empty")
	}
	for i, s := range many {
		if s == "" {
			return nil, fmt.Errorf("'input[%d]' must not be an empty string", i)
		}
	}
	return many, nil
}
