package logtext

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotText reports a file that holds binary data rather than a text log.
var ErrNotText = errors.New("not a text log")

// ErrEmpty reports a log file with no bytes in it.
var ErrEmpty = errors.New("empty log")

// MaxRawLine bounds how many bytes of one raw line are ever held in memory;
// the rest of a longer line is skipped.
const MaxRawLine = 64 << 10

// sniffBytes is how much of the head and of the tail of a file is inspected
// to decide whether it is text.
const sniffBytes = 8 << 10

// countChunk is the read size used when counting newlines.
const countChunk = 1 << 20

// Line is one raw line of a log (without its trailing newline) and the byte
// offset at which it starts.
type Line struct {
	Offset int64
	Raw    []byte
}

// File gives bounded, random access to the lines of a log of any size: it
// never reads more than the window a caller asks for.
type File struct {
	r      io.ReaderAt
	size   int64
	name   string
	closer io.Closer
}

// OpenFile opens the log at path and checks that it is a non-empty text file.
func OpenFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("stat log %s: %w", path, err)
	}
	if fi.IsDir() {
		fh.Close()
		return nil, fmt.Errorf("open log %s: is a directory", path)
	}
	f, err := NewFile(fh, fi.Size(), path)
	if err != nil {
		fh.Close()
		return nil, err
	}
	f.closer = fh
	return f, nil
}

// NewFile wraps size bytes readable from r as a log named name, checking that
// they are non-empty text.
func NewFile(r io.ReaderAt, size int64, name string) (*File, error) {
	if size <= 0 {
		return nil, fmt.Errorf("log %s: %w", name, ErrEmpty)
	}
	f := &File{r: r, size: size, name: name}
	head, err := f.readAt(0, sniffBytes)
	if err != nil {
		return nil, err
	}
	var tail []byte
	if size > sniffBytes {
		if tail, err = f.readAt(size-sniffBytes, sniffBytes); err != nil {
			return nil, err
		}
	}
	head, tail = withoutHoles(head), withoutHoles(tail)
	if len(head) == 0 && len(tail) == 0 {
		return nil, fmt.Errorf("log %s: %w: only NUL bytes where text was expected (a sparse or preallocated file)", name, ErrNotText)
	}
	if !LooksLikeText(head) || !LooksLikeText(tail) {
		return nil, fmt.Errorf("log %s: %w", name, ErrNotText)
	}
	return f, nil
}

// holeRun is the shortest run of NUL bytes taken for a hole: the zeros a
// log gains when it is truncated under a writer that keeps its offset, or
// extended sparse. Binary data has NULs too, but never only NULs.
const holeRun = 64

// withoutHoles returns b without its runs of holeRun or more NUL bytes.
func withoutHoles(b []byte) []byte {
	if bytes.IndexByte(b, 0) < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return append(out, b...)
		}
		out = append(out, b[:i]...)
		b = b[i:]
		n := 0
		for n < len(b) && b[n] == 0 {
			n++
		}
		if n < holeRun {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// LooksLikeText reports whether b is plausibly text: no NUL bytes and at most
// one byte in ten a control character other than tab, newline, carriage
// return, backspace or escape. Invalid UTF-8 is allowed; it is repaired later.
func LooksLikeText(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	control := 0
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\b' && c != 0x1b && c != '\f' {
			control++
		}
	}
	return control*10 <= len(b)
}

// Close releases the file opened by OpenFile; it is a no-op for NewFile.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

// Name returns the path or name the file was opened with.
func (f *File) Name() string { return f.name }

// Size returns the size of the file in bytes.
func (f *File) Size() int64 { return f.size }

// readAt reads up to n bytes at off, fewer at the end of the file.
func (f *File) readAt(off int64, n int) ([]byte, error) {
	if off < 0 {
		off = 0
	}
	if rest := f.size - off; int64(n) > rest {
		n = int(max(rest, 0))
	}
	buf := make([]byte, n)
	got, err := f.r.ReadAt(buf, off)
	if err != nil && !(errors.Is(err, io.EOF) && got == n) {
		if errors.Is(err, io.EOF) {
			return buf[:got], nil
		}
		return nil, fmt.Errorf("read log %s at byte %d: %w", f.name, off, err)
	}
	return buf[:got], nil
}

// LineStart returns the offset of the first line that starts at or after off.
// A line longer than MaxRawLine has no findable start within the bound; then
// off itself is returned so that callers always make progress.
func (f *File) LineStart(off int64) (int64, error) {
	if off <= 0 {
		return 0, nil
	}
	if off >= f.size {
		return f.size, nil
	}
	buf, err := f.readAt(off-1, MaxRawLine)
	if err != nil {
		return 0, err
	}
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		if off-1+int64(len(buf)) >= f.size {
			return f.size, nil
		}
		return off, nil
	}
	return off + int64(i), nil
}

// ReadLines reads whole lines starting at off (which should be a line start)
// until maxLines lines or about maxBytes bytes have been read or end is
// reached. It returns the lines and the offset just after the last one. A
// line longer than MaxRawLine is returned cut to that length.
func (f *File) ReadLines(off, end int64, maxLines, maxBytes int) ([]Line, int64, error) {
	end = min(end, f.size)
	budget := int64(maxBytes)
	var lines []Line
	for off < end && len(lines) < maxLines && budget > 0 {
		want := max(min(budget, end-off), min(MaxRawLine, end-off))
		buf, err := f.readAt(off, int(want))
		if err != nil {
			return lines, off, err
		}
		if len(buf) == 0 {
			break
		}
		used := 0
		for len(lines) < maxLines {
			j := bytes.IndexByte(buf[used:], '\n')
			if j < 0 {
				break
			}
			lines = append(lines, Line{Offset: off + int64(used), Raw: boundRaw(buf[used : used+j])})
			used += j + 1
		}
		if len(lines) < maxLines && used < len(buf) {
			rest := buf[used:]
			switch {
			case off+int64(len(buf)) >= end:
				// the last line of the range has no newline
				lines = append(lines, Line{Offset: off + int64(used), Raw: boundRaw(rest)})
				used = len(buf)
			case used == 0:
				// one line longer than the read: keep its head, skip the rest
				lines = append(lines, Line{Offset: off, Raw: boundRaw(rest)})
				next, err := f.LineStart(off + int64(len(buf)))
				if err != nil {
					return lines, off, err
				}
				budget -= next - off
				off = next
				continue
			}
		}
		if used == 0 {
			break
		}
		off += int64(used)
		budget -= int64(used)
	}
	return lines, off, nil
}

// boundRaw cuts a raw line to MaxRawLine bytes.
func boundRaw(raw []byte) []byte {
	if len(raw) > MaxRawLine {
		return raw[:MaxRawLine]
	}
	return raw
}

// LineNumber returns the 1-based number of the line that starts at off, by
// counting the newlines before it in bounded chunks.
func (f *File) LineNumber(off int64) (int, error) {
	n, err := f.CountNewlines(0, off)
	return n + 1, err
}

// CountNewlines counts the newlines in the bytes [from, to), reading bounded
// chunks and skipping the holes of a sparse file where the reader can.
func (f *File) CountNewlines(from, to int64) (int, error) {
	from, to = max(from, 0), min(to, f.size)
	n := 0
	for pos := from; pos < to; {
		if next, ok := nextData(f.r, pos); ok && next > pos {
			pos = min(next, to)
			continue
		}
		chunk := int(min(int64(countChunk), to-pos))
		buf, err := f.readAt(pos, chunk)
		if err != nil {
			return 0, err
		}
		if len(buf) == 0 {
			break
		}
		n += bytes.Count(buf, []byte{'\n'})
		pos += int64(len(buf))
	}
	return n, nil
}
