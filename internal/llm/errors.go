package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// ErrDisabled is returned by every call when the layer is switched off.
var ErrDisabled = errors.New("llm disabled")

// Kind says why a call failed, in the terms a caller acts on.
type Kind string

// The failure kinds.
const (
	// KindDisabled: the layer is off.
	KindDisabled Kind = "disabled"
	// KindUnavailable: the server could not be reached or answered 5xx.
	KindUnavailable Kind = "unavailable"
	// KindTimeout: the call ran past its deadline.
	KindTimeout Kind = "timeout"
	// KindRateLimited: the server kept answering 429 after the retries.
	KindRateLimited Kind = "rate-limited"
	// KindRejected: the server refused the request (4xx: auth, unknown model, bad request).
	KindRejected Kind = "rejected"
	// KindBadAnswer: the answer was not the protocol's JSON or failed the schema.
	KindBadAnswer Kind = "bad-answer"
)

// Error is a failed LLM call with its kind and cause.
type Error struct {
	// Op is the operation, e.g. "chat" or "embeddings".
	Op string
	// Kind classifies the failure.
	Kind Kind
	// Status is the HTTP status when the server answered one.
	Status int
	// Err is the underlying cause.
	Err error
}

// Error returns the message.
func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("llm %s: %s (HTTP %d): %v", e.Op, e.Kind, e.Status, e.Err)
	}
	return fmt.Sprintf("llm %s: %s: %v", e.Op, e.Kind, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err, or "" when err is not an LLM failure.
func KindOf(err error) Kind {
	if errors.Is(err, ErrDisabled) {
		return KindDisabled
	}
	var le *Error
	if errors.As(err, &le) {
		return le.Kind
	}
	var se *SchemaError
	if errors.As(err, &se) {
		return KindBadAnswer
	}
	return ""
}

// Note turns a failed refinement into the short remark attached to the
// deterministic answer that stands in its place.
func Note(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, ErrDisabled) {
		return "llm disabled; deterministic answer"
	}
	kind := KindOf(err)
	if kind == "" {
		kind = "error"
	}
	return fmt.Sprintf("deterministic answer stands: llm %s: %v", kind, err)
}

// classify wraps err from the openai client into an *Error.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var le *Error
	if errors.As(err, &le) {
		return err
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0 {
		return &Error{Op: op, Kind: kindForStatus(apiErr.HTTPStatusCode), Status: apiErr.HTTPStatusCode, Err: errors.New(apiErr.Message)}
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return &Error{Op: op, Kind: kindForStatus(reqErr.HTTPStatusCode), Status: reqErr.HTTPStatusCode, Err: fmt.Errorf("%s: %s", reqErr.HTTPStatus, truncate(string(reqErr.Body), 200))}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Op: op, Kind: KindTimeout, Err: err}
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return &Error{Op: op, Kind: KindTimeout, Err: err}
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, errBodyTooLarge) {
		return &Error{Op: op, Kind: KindBadAnswer, Err: err}
	}
	return &Error{Op: op, Kind: KindUnavailable, Err: err}
}

func kindForStatus(status int) Kind {
	switch {
	case status == http.StatusTooManyRequests:
		return KindRateLimited
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return KindTimeout
	case status >= 500:
		return KindUnavailable
	case status >= 400:
		return KindRejected
	}
	return KindBadAnswer
}

// retryable reports whether a failed attempt may succeed if sent again.
func retryable(err error) bool {
	k := KindOf(err)
	return k == KindRateLimited || k == KindUnavailable && statusOf(err) >= 500
}

func statusOf(err error) int {
	var le *Error
	if errors.As(err, &le) {
		return le.Status
	}
	return 0
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
