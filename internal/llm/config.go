// Package llm is schedmate's optional client for any OpenAI-compatible
// server (vLLM, Ollama, llama.cpp, hosted APIs). It adds what every caller
// needs on top of the wire protocol: a deadline on every call, bounded
// concurrency, rate-limit retries that honour Retry-After, JSON answers
// validated against a schema with one repair retry, token accounting, a
// content-addressed answer cache and an audit hook that sees every request
// with secrets redacted.
//
// The layer is opt-in. When it is disabled, down, slow or answers garbage,
// callers keep their deterministic answer and attach Note(err) to it.
package llm

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/config"
)

// Config holds the settings of the LLM layer. The zero value is disabled.
type Config struct {
	// Enabled turns the layer on; when false every call returns ErrDisabled.
	Enabled bool `yaml:"enabled" mapstructure:"enabled" json:"enabled"`
	// BaseURL is the server's OpenAI-compatible root, e.g. http://gpu01:8000/v1.
	BaseURL string `yaml:"base_url" mapstructure:"base_url" json:"base_url"`
	// Model is the chat model name the server expects.
	Model string `yaml:"model" mapstructure:"model" json:"model"`
	// EmbeddingModel is the model used for embeddings; empty disables Embed.
	EmbeddingModel string `yaml:"embedding_model" mapstructure:"embedding_model" json:"embedding_model"`
	// APIKeyFile names a file whose first line is the API key.
	APIKeyFile string `yaml:"api_key_file" mapstructure:"api_key_file" json:"api_key_file"`
	// APIKeyEnv names an environment variable that holds the API key.
	APIKeyEnv string `yaml:"api_key_env" mapstructure:"api_key_env" json:"api_key_env"`
	// Timeout bounds one HTTP call, including its rate-limit retries.
	Timeout time.Duration `yaml:"timeout" mapstructure:"timeout" json:"timeout"`
	// MaxTokens caps the completion length of one answer.
	MaxTokens int `yaml:"max_tokens" mapstructure:"max_tokens" json:"max_tokens"`
	// Concurrency caps the calls in flight at once from one process.
	Concurrency int `yaml:"concurrency" mapstructure:"concurrency" json:"concurrency"`
	// MaxRetries is how many times a 429 or 5xx answer is retried.
	MaxRetries int `yaml:"max_retries" mapstructure:"max_retries" json:"max_retries"`
	// MaxRetryWait caps how long one Retry-After wait may last.
	MaxRetryWait time.Duration `yaml:"max_retry_wait" mapstructure:"max_retry_wait" json:"max_retry_wait"`
}

// DefaultConfig returns the defaults: disabled, a local vLLM address, and
// bounds small enough that a slow server never stalls a command for long.
func DefaultConfig() Config {
	return Config{
		Enabled:      false,
		BaseURL:      "http://localhost:8000/v1",
		Model:        "Qwen/Qwen2.5-7B-Instruct",
		APIKeyEnv:    "SCHEDMATE_LLM_API_KEY",
		Timeout:      30 * time.Second,
		MaxTokens:    1024,
		Concurrency:  4,
		MaxRetries:   2,
		MaxRetryWait: 10 * time.Second,
	}
}

// Validate reports the first setting that makes the layer unusable. A
// disabled configuration is always valid.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	u, err := url.Parse(c.BaseURL)
	switch {
	case c.BaseURL == "":
		return errors.New("llm: base_url is empty")
	case err != nil:
		return fmt.Errorf("llm: base_url %q: %w", c.BaseURL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("llm: base_url %q: scheme must be http or https", c.BaseURL)
	case u.Host == "":
		return fmt.Errorf("llm: base_url %q: no host", c.BaseURL)
	case c.Model == "":
		return errors.New("llm: model is empty")
	case c.Timeout <= 0:
		return fmt.Errorf("llm: timeout %s must be positive", c.Timeout)
	case c.MaxTokens <= 0:
		return fmt.Errorf("llm: max_tokens %d must be positive", c.MaxTokens)
	case c.Concurrency <= 0:
		return fmt.Errorf("llm: concurrency %d must be positive", c.Concurrency)
	case c.MaxRetries < 0:
		return fmt.Errorf("llm: max_retries %d must not be negative", c.MaxRetries)
	}
	return nil
}

// maxKeyFileBytes bounds how much of an API key file is read.
const maxKeyFileBytes = 16 << 10

// APIKey resolves the API key: the key file when set, else the environment
// variable named by APIKeyEnv (looked up with getenv; nil means os.Getenv).
// No key at all is not an error: local servers usually need none.
func (c Config) APIKey(getenv func(string) string) (string, error) {
	if c.APIKeyFile != "" {
		f, err := os.Open(c.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("read llm api key file: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
		if err != nil {
			return "", fmt.Errorf("read llm api key file %s: %w", c.APIKeyFile, err)
		}
		if len(b) > maxKeyFileBytes {
			return "", fmt.Errorf("llm api key file %s: larger than %d bytes", c.APIKeyFile, maxKeyFileBytes)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		key := strings.TrimSpace(line)
		if key == "" {
			return "", fmt.Errorf("llm api key file %s: empty", c.APIKeyFile)
		}
		return key, nil
	}
	if c.APIKeyEnv == "" {
		return "", nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	return strings.TrimSpace(getenv(c.APIKeyEnv)), nil
}

// FromConfig maps the LLM section of schedmate's configuration file onto a
// Config, keeping DefaultConfig's values where the section leaves a field empty.
func FromConfig(s config.LLM) Config {
	c := DefaultConfig()
	c.Enabled = s.Enabled
	if s.BaseURL != "" {
		c.BaseURL = s.BaseURL
	}
	if s.Model != "" {
		c.Model = s.Model
	}
	c.EmbeddingModel = s.EmbeddingModel
	c.APIKeyFile = s.APIKeyFile
	c.APIKeyEnv = s.APIKeyEnv
	if s.Timeout > 0 {
		c.Timeout = s.Timeout
	}
	if s.MaxTokens > 0 {
		c.MaxTokens = s.MaxTokens
	}
	if s.Concurrency > 0 {
		c.Concurrency = s.Concurrency
	}
	c.MaxRetries = s.MaxRetries
	if s.MaxRetryWait > 0 {
		c.MaxRetryWait = s.MaxRetryWait
	}
	return c
}
