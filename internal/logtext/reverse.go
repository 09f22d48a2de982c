package logtext

import (
	"bytes"
	"fmt"
	"io"
)

// reverseBlockSize is how many bytes ReverseScanner reads at a time.
const reverseBlockSize = 64 << 10

// DefaultMaxRawLine bounds the raw bytes ReverseScanner keeps of one line.
const DefaultMaxRawLine = 256 << 10

// ReverseScanner yields the raw lines of a file from the last to the first,
// reading fixed-size blocks backwards, so the cost of reading the newest
// lines does not depend on the size of the file. A line longer than the
// configured bound is cut: only its last bytes are kept (the end of a line
// rewritten with carriage returns is what a terminal shows) and Truncated
// reports it. Lines are returned without their '\n'; a '\r' before it is kept.
type ReverseScanner struct {
	r         io.ReaderAt
	pos       int64 // offset of the first byte not yet read
	buf       []byte
	line      []byte
	truncated bool
	maxLine   int
	limit     int64
	bytesRead int64
	started   bool
	done      bool
	err       error
}

// NewReverseScanner returns a scanner over the first size bytes of r. maxLine
// bounds the bytes kept per line; 0 means DefaultMaxRawLine.
func NewReverseScanner(r io.ReaderAt, size int64, maxLine int) *ReverseScanner {
	if maxLine <= 0 {
		maxLine = DefaultMaxRawLine
	}
	return &ReverseScanner{r: r, pos: size, maxLine: maxLine}
}

// Scan advances to the previous line. It returns false at the start of the
// file or on a read error (see Err).
func (s *ReverseScanner) Scan() bool {
	if s.done || s.err != nil {
		return false
	}
	if !s.started {
		s.started = true
		if s.pos == 0 {
			s.done = true
			return false
		}
		if !s.fill() {
			return false
		}
		if s.buf[len(s.buf)-1] == '\n' {
			s.buf = s.buf[:len(s.buf)-1]
		}
	}
	s.truncated = false
	for {
		if i := bytes.LastIndexByte(s.buf, '\n'); i >= 0 {
			s.line = s.buf[i+1:]
			s.buf = s.buf[:i]
			return true
		}
		if s.pos == 0 {
			s.line = s.buf
			s.buf = nil
			s.done = true
			return true
		}
		if len(s.buf) >= s.maxLine {
			return s.skipLongLine()
		}
		if !s.fill() {
			return false
		}
	}
}

// skipLongLine keeps the last maxLine bytes of the current line and discards
// the rest of it, reading backwards until the newline that precedes it.
func (s *ReverseScanner) skipLongLine() bool {
	tail := append([]byte(nil), s.buf[len(s.buf)-s.maxLine:]...)
	s.buf = s.buf[:0]
	for s.pos > 0 {
		if s.limit > 0 && s.bytesRead >= s.limit {
			break
		}
		if !s.fill() {
			return false
		}
		if i := bytes.LastIndexByte(s.buf, '\n'); i >= 0 {
			s.buf = s.buf[:i]
			s.line, s.truncated = tail, true
			return true
		}
		s.buf = s.buf[:0]
	}
	s.line, s.truncated, s.done = tail, true, true
	return true
}

// fill prepends the previous block of the file to buf.
func (s *ReverseScanner) fill() bool {
	n := int64(reverseBlockSize)
	if n > s.pos {
		n = s.pos
	}
	if n == 0 {
		return true
	}
	block := make([]byte, int(n)+len(s.buf))
	got, err := s.r.ReadAt(block[:n], s.pos-n)
	s.bytesRead += int64(got)
	if int64(got) < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		s.err = fmt.Errorf("read %d bytes at offset %d: %w", n, s.pos-n, err)
		return false
	}
	copy(block[n:], s.buf)
	s.buf = block
	s.pos -= n
	return true
}

// SetLimit bounds the bytes read while skipping the start of an overlong
// line: past n, the kept end of that line is returned as the first line of
// the file. n <= 0 means no bound.
func (s *ReverseScanner) SetLimit(n int64) { s.limit = n }

// Line returns the current line. It stays valid until the next call to Scan.
func (s *ReverseScanner) Line() []byte { return s.line }

// Truncated reports whether the current line was longer than the bound and
// only its end was kept.
func (s *ReverseScanner) Truncated() bool { return s.truncated }

// BytesRead returns how many bytes have been read from the file so far.
func (s *ReverseScanner) BytesRead() int64 { return s.bytesRead }

// Err returns the first read error, if any.
func (s *ReverseScanner) Err() error { return s.err }
