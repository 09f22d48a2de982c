package llmtest

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"
)

// CountTokens estimates tokens the way BPE tokenizers average on English and
// code: one token per four bytes, rounded up.
func CountTokens(s string) int {
	return (len(s) + 3) / 4
}

// perMessageTokens is the chat template's overhead for one message.
const perMessageTokens = 4

// promptTokens counts a chat request's prompt: messages, tool calls in
// them, tool definitions and the response schema.
func promptTokens(req *openai.ChatCompletionRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += perMessageTokens + CountTokens(m.Content)
		for _, tc := range m.ToolCalls {
			n += CountTokens(tc.Function.Name) + CountTokens(tc.Function.Arguments)
		}
	}
	if len(req.Tools) > 0 {
		b, _ := json.Marshal(req.Tools)
		n += CountTokens(string(b))
	}
	if req.ResponseFormat != nil {
		b, _ := json.Marshal(req.ResponseFormat)
		n += CountTokens(string(b))
	}
	return n
}
