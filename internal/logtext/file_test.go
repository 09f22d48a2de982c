package logtext

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newTestFile(t testing.TB, data string) *File {
	t.Helper()
	f, err := NewFile(strings.NewReader(data), int64(len(data)), "test.log")
	if err != nil {
		t.Fatalf("new file: %v", err)
	}
	return f
}

func TestNewFileRejects(t *testing.T) {
	tests := []struct {
		name string
		data string
		want error
	}{
		{"empty", "", ErrEmpty},
		{"nul bytes", "abc\x00def\n", ErrNotText},
		{"control noise", strings.Repeat("\x01\x02\x03a", 100), ErrNotText},
		{"binary tail", strings.Repeat("text line\n", 2000) + strings.Repeat("\x7fELF\x02\x01\x01\x00\x00\x03\x00>\x00", 100), ErrNotText},
		{"only holes", strings.Repeat("\x00", 20000), ErrNotText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewFile(strings.NewReader(tt.data), int64(len(tt.data)), "x.log")
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewFileAcceptsTextAfterHole(t *testing.T) {
	data := strings.Repeat("\x00", 30000) + "Traceback (most recent call last):\nValueError: late\n"
	f := newTestFile(t, data)
	n, err := f.LineNumber(int64(len(data)))
	if err != nil || n != 3 {
		t.Fatalf("line number %d, %v", n, err)
	}
}

func TestCountNewlinesSkipsHoles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sparse.log")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("a\nb\n"), 1<<30); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	f, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := f.CountNewlines(0, f.Size()); err != nil || n != 2 {
		t.Fatalf("newlines %d, %v", n, err)
	}
}

func TestNewFileAcceptsMessyText(t *testing.T) {
	data := "\x1b[32mok\x1b[0m\r\n 50%|#####| 5/10\r 60%|######| 6/10\n\xff\xfe bad utf8\n"
	newTestFile(t, data)
}

func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenFile(filepath.Join(dir, "missing.log")); err == nil {
		t.Fatal("missing file opened")
	}
	if _, err := OpenFile(dir); err == nil {
		t.Fatal("directory opened")
	}
	p := filepath.Join(dir, "a.log")
	if err := os.WriteFile(p, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Size() != 8 || f.Name() != p {
		t.Fatalf("size %d name %s", f.Size(), f.Name())
	}
}

func TestLineStartAndNumber(t *testing.T) {
	f := newTestFile(t, "aa\nbbb\n\ncccc")
	tests := []struct {
		off       int64
		wantStart int64
		wantLine  int
	}{
		{0, 0, 1}, {1, 3, 2}, {3, 3, 2}, {4, 7, 3}, {7, 7, 3}, {8, 8, 4}, {10, 12, 4},
	}
	for _, tt := range tests {
		got, err := f.LineStart(tt.off)
		if err != nil || got != tt.wantStart {
			t.Errorf("LineStart(%d) = %d, %v; want %d", tt.off, got, err, tt.wantStart)
		}
		n, err := f.LineNumber(tt.wantStart)
		if err != nil || (tt.wantStart < f.Size() && n != tt.wantLine) {
			t.Errorf("LineNumber(%d) = %d, %v; want %d", tt.wantStart, n, err, tt.wantLine)
		}
	}
}

func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", MaxRawLine+100)
	tests := []struct {
		name     string
		data     string
		maxLines int
		want     []string
	}{
		{"plain", "a\nb\nc\n", 10, []string{"a", "b", "c"}},
		{"no final newline", "a\nb", 10, []string{"a", "b"}},
		{"line budget", "a\nb\nc\n", 2, []string{"a", "b"}},
		{"long line is cut", long + "\nend\n", 10, []string{long[:MaxRawLine], "end"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newTestFile(t, tt.data)
			lines, _, err := f.ReadLines(0, f.Size(), tt.maxLines, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range lines {
				got = append(got, string(l.Raw))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("got %d lines %.40q, want %d", len(got), got, len(tt.want))
			}
		})
	}
}

func FuzzReadLines(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), int64(2), 3)
	f.Add([]byte("\r\n\r\n\x1b[1m"), int64(0), 1)
	f.Fuzz(func(t *testing.T, data []byte, off int64, maxLines int) {
		file, err := NewFile(bytes.NewReader(data), int64(len(data)), "fuzz.log")
		if err != nil {
			return
		}
		if off < 0 {
			off = -off
		}
		off %= int64(len(data)) + 1
		maxLines = maxLines%50 + 1
		if maxLines < 1 {
			maxLines = 1
		}
		start, err := file.LineStart(off)
		if err != nil || start < off || start > file.Size() {
			t.Fatalf("LineStart(%d) = %d, %v", off, start, err)
		}
		lines, next, err := file.ReadLines(start, file.Size(), maxLines, 1<<16)
		if err != nil || next < start || next > file.Size() || len(lines) > maxLines {
			t.Fatalf("ReadLines: %d lines next %d err %v", len(lines), next, err)
		}
		for _, l := range lines {
			if !bytes.HasPrefix(data[l.Offset:], l.Raw) || bytes.IndexByte(l.Raw, '\n') >= 0 {
				t.Fatalf("line at %d does not match the file", l.Offset)
			}
			_ = Clean(l.Raw)
		}
	})
}
