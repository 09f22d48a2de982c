package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// SchemaError is an answer that still failed its schema after the repair retry.
type SchemaError struct {
	// Schema is the schema's name.
	Schema string
	// Answer is the last answer text, bounded.
	Answer string
	// Err says what was wrong with it.
	Err error
}

// Error returns the message.
func (e *SchemaError) Error() string {
	return fmt.Sprintf("llm answer does not match schema %s: %v", e.Schema, e.Err)
}

// Unwrap returns the cause.
func (e *SchemaError) Unwrap() error { return e.Err }

// Validator is implemented by answer types with rules beyond the schema
// (ranges, consistency); Decode calls it after decoding.
type Validator interface {
	Validate() error
}

// Decode asks req with a json_schema response format for T and decodes the
// answer. An answer that is not JSON, misses required fields, has wrong types
// or enum values, or fails T's Validate is sent back once with the error for
// repair; a second failure returns a *SchemaError. Only valid answers are
// cached, under the key of the original request.
func Decode[T any](ctx context.Context, c *Client, req ChatRequest, schema *Schema) (T, Usage, error) {
	var zero T
	req.Schema = schema
	key, err := HashKey("decode", c.wireRequest(req))
	if err != nil {
		return zero, Usage{}, err
	}
	if !req.NoCache {
		if resp, ok := c.lookup(key, req.Purpose, c.wireRequest(req)); ok {
			if v, err := decodeAs[T](resp.Message.Content, schema); err == nil {
				return v, resp.Usage, nil
			}
		}
	}
	useCache := !req.NoCache
	req.NoCache = true
	var total Usage
	var lastErr error
	var lastAnswer string
	for attempt := 0; attempt < 2; attempt++ {
		resp, err := c.Chat(ctx, req)
		if err != nil {
			return zero, total, err
		}
		total = total.Add(resp.Usage)
		lastAnswer = resp.Message.Content
		v, err := decodeAs[T](lastAnswer, schema)
		if err == nil && resp.FinishReason == openai.FinishReasonLength {
			err = errors.New("answer was cut at the token limit")
		}
		if err == nil {
			if useCache {
				c.store(key, resp.Message, resp.FinishReason)
			}
			return v, total, nil
		}
		lastErr = err
		req.Messages = append(append([]openai.ChatCompletionMessage(nil), req.Messages...),
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: truncate(lastAnswer, 4096)},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: repairPrompt(err)},
		)
	}
	return zero, total, &SchemaError{Schema: schema.Name, Answer: truncate(lastAnswer, 512), Err: lastErr}
}

func repairPrompt(err error) string {
	return "Your answer is invalid: " + err.Error() +
		". Reply again with only one JSON object that matches the required schema, no prose."
}

// decodeAs extracts the JSON object from an answer, validates it against the
// schema and decodes it into T.
func decodeAs[T any](answer string, schema *Schema) (T, error) {
	var v T
	text, err := jsonObject(answer)
	if err != nil {
		return v, err
	}
	var generic any
	if err := json.Unmarshal([]byte(text), &generic); err != nil {
		return v, fmt.Errorf("answer is not valid JSON: %w", err)
	}
	if err := schema.Validate(generic); err != nil {
		return v, err
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("decode answer: %w", err)
	}
	if val, ok := any(&v).(Validator); ok {
		if err := val.Validate(); err != nil {
			return v, err
		}
	}
	return v, nil
}

// jsonObject returns the JSON object in an answer, tolerating code fences
// and prose around it.
func jsonObject(answer string) (string, error) {
	s := strings.TrimSpace(answer)
	if s == "" {
		return "", errors.New("answer is empty")
	}
	start := strings.IndexByte(s, '{')
	end := strings.LastIndexByte(s, '}')
	if start < 0 || end < start {
		return "", fmt.Errorf("answer holds no JSON object: %q", truncate(s, 80))
	}
	return s[start : end+1], nil
}
