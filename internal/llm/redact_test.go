package llm

import (
	"strings"
	"testing"
	"time"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"export PASSWORD=hunter22", "export PASSWORD=" + Redacted},
		{"--db-password hunter22", "--db-password hunter22"},
		{"db_password: 's3cr3t!'", "db_password: '" + Redacted + "'"},
		{`{"api_key": "abcd1234efgh"}`, `{"api_key": "` + Redacted + `"}`},
		{"WANDB_API_KEY=0123456789abcdef", "WANDB_API_KEY=" + Redacted},
		{"HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789", "HF_TOKEN=" + Redacted},
		{"using hf_abcdefghijklmnopqrstuvwxyz0123456789 now", "using " + Redacted + " now"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "Authorization: Bearer " + Redacted},
		{"key sk-proj-abcdefghijklmnop1234", "key " + Redacted},
		{"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID=" + Redacted},
		{"id AKIAIOSFODNN7EXAMPLE here", "id " + Redacted + " here"},
		{"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = " + Redacted},
		{"git clone https://user:ghtoken123@github.com/x/y", "git clone https://user:" + Redacted + "github.com/x/y"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nafter", Redacted + "\nafter"},
		// Figures that only look like secrets stay.
		{"max_tokens=512 num_tokens: 2048 tokens/s 1234", "max_tokens=512 num_tokens: 2048 tokens/s 1234"},
		{"iter 10 | loss 2.31 | lr 3e-4 | elapsed 1.2s", "iter 10 | loss 2.31 | lr 3e-4 | elapsed 1.2s"},
		{"RuntimeError: CUDA error: out of memory", "RuntimeError: CUDA error: out of memory"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func FuzzRedact(f *testing.F) {
	for _, s := range []string{"password=abc123", "Bearer abcdefghijk", "sk-abcdefghijklmnopqrstuv", "-----BEGIN PRIVATE KEY-----\nx", "\xff\xfe token: zzzzzz", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 {
			return
		}
		once := Redact(s)
		if twice := Redact(once); twice != once {
			t.Errorf("Redact is not idempotent on %q: %q then %q", s, once, twice)
		}
		if strings.Contains(s, "sk-abcdefghijklmnopqrstuv") && strings.Contains(once, "sk-abcdefghijklmnopqrstuv") {
			t.Errorf("key survived in %q", once)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{"-1", 0},
		{"999999", 0},
		{"soon", 0},
		{"Thu, 01 Jan 2026 00:00:10 GMT", 10 * time.Second},
		{"Wed, 31 Dec 2025 23:59:00 GMT", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// BenchmarkRedact measures redaction of a 200-line failure window, the
// largest text one refinement sends.
func BenchmarkRedact(b *testing.B) {
	var sb strings.Builder
	for i := range 200 {
		sb.WriteString("[rank3]: iteration 1200 | loss 2.3 | lr 3e-4 | NCCL WARN NET/IB : Got completion from peer 10.0.0.")
		sb.WriteString(strings.Repeat("x", i%50))
		sb.WriteByte('\n')
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Redact(text)
	}
}
