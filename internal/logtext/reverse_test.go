package logtext

import (
	"bytes"
	"strings"
	"testing"
)

func reverseLines(t testing.TB, data string, maxLine int) (lines []string, truncated []bool) {
	t.Helper()
	s := NewReverseScanner(strings.NewReader(data), int64(len(data)), maxLine)
	for s.Scan() {
		lines = append(lines, string(s.Line()))
		truncated = append(truncated, s.Truncated())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return lines, truncated
}

func TestReverseScanner(t *testing.T) {
	long := strings.Repeat("x", 3*reverseBlockSize) + "END"
	tests := []struct {
		name    string
		data    string
		maxLine int
		want    []string
		trunc   []bool
	}{
		{name: "empty", data: "", want: nil},
		{name: "one line no newline", data: "abc", want: []string{"abc"}, trunc: []bool{false}},
		{name: "trailing newline", data: "a\nb\n", want: []string{"b", "a"}, trunc: []bool{false, false}},
		{name: "blank lines kept", data: "a\n\nb", want: []string{"b", "", "a"}, trunc: []bool{false, false, false}},
		{name: "crlf kept", data: "a\r\nb\r\n", want: []string{"b\r", "a\r"}, trunc: []bool{false, false}},
		{name: "long line keeps its end", data: "first\n" + long + "\nlast\n", maxLine: 8,
			want: []string{"last", "xxxxxEND", "first"}, trunc: []bool{false, true, false}},
		{name: "long first line", data: long, maxLine: 4, want: []string{"xEND"}, trunc: []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, trunc := reverseLines(t, tt.data, tt.maxLine)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Fatalf("lines = %q, want %q", got, tt.want)
			}
			for i := range trunc {
				if trunc[i] != tt.trunc[i] {
					t.Errorf("line %d truncated = %v, want %v", i, trunc[i], tt.trunc[i])
				}
			}
		})
	}
}

func TestReverseScannerAcrossBlocks(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i < 20000; i++ {
		b.WriteString(strings.Repeat("y", i%97))
		b.WriteByte('\n')
	}
	got, _ := reverseLines(t, b.String(), 0)
	if len(got) != 20000 {
		t.Fatalf("got %d lines, want 20000", len(got))
	}
	for i, line := range got {
		if want := (19999 - i) % 97; len(line) != want {
			t.Fatalf("line %d has %d bytes, want %d", i, len(line), want)
		}
	}
}

func FuzzReverseScanner(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), 4)
	f.Add([]byte("\n\n\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, maxLine int) {
		if maxLine < 0 || maxLine > 1<<20 {
			return
		}
		s := NewReverseScanner(bytes.NewReader(data), int64(len(data)), maxLine)
		var parts []string
		anyTrunc := false
		for s.Scan() {
			parts = append(parts, string(s.Line()))
			anyTrunc = anyTrunc || s.Truncated()
		}
		if s.Err() != nil {
			t.Fatal(s.Err())
		}
		if anyTrunc {
			return
		}
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		joined := strings.Join(parts, "\n")
		want := strings.TrimSuffix(string(data), "\n")
		if len(data) > 0 && data[len(data)-1] == '\n' && joined != want {
			t.Fatalf("reassembled %q, want %q", joined, want)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' && joined != string(data) {
			t.Fatalf("reassembled %q, want %q", joined, data)
		}
	})
}
