package llm

import (
	"regexp"
	"strings"
)

// Redacted replaces every secret that Redact removes.
const Redacted = "[REDACTED]"

// secretPattern matches one kind of credential. Group 1 is a prefix that is
// kept (the key name, "Bearer "). The regexp only runs when the lower-cased
// text holds one of the hints, which keeps clean text cheap.
type secretPattern struct {
	hints []string
	re    *regexp.Regexp
}

var secretPatterns = []secretPattern{
	// PEM private keys, whole block.
	{[]string{"private key-----"}, regexp.MustCompile(`()-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`)},
	// HTTP authorization headers and bearer tokens.
	{[]string{"bearer", "basic"}, regexp.MustCompile(`(\b(?:[Bb]earer|BEARER|Basic)\s+)[A-Za-z0-9._~+/=-]{8,}`)},
	// Credentials inside URLs: scheme://user:password@host.
	{[]string{"://"}, regexp.MustCompile(`(://[^/\s:@]+:)[^/\s@]+@`)},
	// key = value pairs whose key names a secret (env files, CLI flags, YAML,
	// JSON). The key must end with the secret word, so max_tokens=512 stays.
	{[]string{"pass", "pwd", "secret", "token", "key", "credential"}, regexp.MustCompile(`(?i)(\b[A-Za-z0-9_.-]*?(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|auth[_-]?key|credentials?)["']?\s*[=:]\s*["']?)[^\s"',;]{4,}`)},
	// Well-known token shapes: OpenAI, GitHub, Hugging Face, Slack, AWS access key ids, Google API keys.
	{[]string{"sk-", "gh", "hf_", "xox", "akia", "asia", "aiza"}, regexp.MustCompile(`()\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|hf_[A-Za-z0-9]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35})`)},
}

// applies reports whether the pattern may match text whose lower-cased form is lower.
func (p secretPattern) applies(lower, s string) bool {
	for _, h := range p.hints {
		if strings.Contains(lower, h) {
			return p.re.MatchString(s)
		}
	}
	return false
}

// Redact removes API keys, bearer tokens, AWS keys, private keys, URL
// credentials and the values of password=/token=/secret= style settings
// from s, keeping the surrounding text.
func Redact(s string) string {
	lower := strings.ToLower(s)
	for _, p := range secretPatterns {
		if p.applies(lower, s) {
			s = p.re.ReplaceAllString(s, "${1}"+Redacted)
		}
	}
	return s
}
