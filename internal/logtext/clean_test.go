package logtext

import (
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"plain", "hello world", "hello world"},
		{"crlf", "hello\r", "hello"},
		{"tqdm overwrite", " 10%|#   | 1/10 [00:01<00:09, 1.0it/s]\r 20%|##  | 2/10 [00:02<00:08, 1.0it/s]", " 20%|##  | 2/10 [00:02<00:08, 1.0it/s]"},
		{"ansi colour", "\x1b[31mERROR\x1b[0m: boom", "ERROR: boom"},
		{"osc title", "\x1b]0;title\x07text", "text"},
		{"invalid utf8", "bad \xff byte", "bad \uFFFD byte"},
		{"tab and control", "a\tb\x01c", "a bc"},
		{"trailing blank segment", "done\r   \r", "done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clean([]byte(tt.raw)); got != tt.want {
				t.Errorf("Clean(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestCleanBoundsLength(t *testing.T) {
	got := Clean([]byte(strings.Repeat("é", MaxLineBytes)))
	if len(got) > MaxLineBytes+len("…") {
		t.Fatalf("len = %d, want <= %d", len(got), MaxLineBytes+3)
	}
	if strings.ContainsRune(got, '\uFFFD') {
		t.Fatalf("truncation produced a replacement character")
	}
}

func TestSplitRankPrefix(t *testing.T) {
	tests := []struct{ line, prefix, rest string }{
		{"[rank3]: RuntimeError: x", "[rank3]: ", "RuntimeError: x"},
		{"0: Traceback (most recent call last):", "0: ", "Traceback (most recent call last):"},
		{"node12: NCCL WARN x", "node12: ", "NCCL WARN x"},
		{"[1,0]<stdout>:# nThread 1", "[1,0]<stdout>:", "# nThread 1"},
		{"[default0]:iteration 5", "[default0]:", "iteration 5"},
		{"RuntimeError: x", "", "RuntimeError: x"},
		{"Epoch 1: 100%", "", "Epoch 1: 100%"},
		{"", "", ""},
	}
	for _, tt := range tests {
		p, r := SplitRankPrefix(tt.line)
		if p != tt.prefix || r != tt.rest {
			t.Errorf("SplitRankPrefix(%q) = %q, %q; want %q, %q", tt.line, p, r, tt.prefix, tt.rest)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"a\rb", "\x1b[", "\x1b]", "\xff\xfe", "[rank1]: x", strings.Repeat("x", 5000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := Clean(raw)
		if len(s) > MaxLineBytes+len("…") {
			t.Fatalf("line too long: %d", len(s))
		}
		if strings.ContainsAny(s, "\r\n\x1b") {
			t.Fatalf("control characters left in %q", s)
		}
		SplitRankPrefix(s)
	})
}
