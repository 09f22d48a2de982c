// Package logtext turns raw bytes of job logs into clean text lines: it
// removes terminal escape sequences, resolves carriage-return overwrites of
// progress bars, repairs invalid UTF-8, bounds line length and recognises the
// per-rank prefixes that launchers put in front of every line.
package logtext

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/schedmate/schedmate/internal/lazyre"
)

// MaxLineBytes bounds the length of a cleaned line; longer lines are cut and
// marked with a trailing ellipsis.
const MaxLineBytes = 4096

// StripANSI removes ANSI/VT100 escape sequences (CSI, OSC and two-byte ESC
// sequences) from b. It returns b itself when there is nothing to remove.
func StripANSI(b []byte) []byte {
	i := bytes.IndexByte(b, 0x1b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	out = append(out, b[:i]...)
	for i < len(b) {
		c := b[i]
		if c != 0x1b {
			out = append(out, c)
			i++
			continue
		}
		i++
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '[': // CSI: parameters then one final byte in 0x40..0x7e
			i++
			for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
				i++
			}
			i++
		case ']': // OSC: ends with BEL or ESC \
			i++
			for i < len(b) {
				if b[i] == 0x07 {
					i++
					break
				}
				if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
					i += 2
					break
				}
				i++
			}
		default:
			i++
		}
	}
	return out
}

// Segments splits one raw line (without its trailing newline) at carriage
// returns and returns the non-blank segments in order. A tqdm bar rewritten
// with '\r' yields one segment per update; the last one is what a terminal
// would show.
func Segments(raw []byte) [][]byte {
	raw = bytes.TrimRight(raw, "\r")
	if bytes.IndexByte(raw, '\r') < 0 {
		return [][]byte{raw}
	}
	parts := bytes.Split(raw, []byte{'\r'})
	out := parts[:0]
	for _, p := range parts {
		if len(bytes.TrimSpace(p)) > 0 {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return [][]byte{nil}
	}
	return out
}

// Clean returns the text a terminal would show for one raw log line: the last
// carriage-return segment, without escape sequences or control characters,
// with invalid UTF-8 replaced by U+FFFD and cut to MaxLineBytes.
func Clean(raw []byte) string {
	segs := Segments(raw)
	return CleanSegment(segs[len(segs)-1])
}

// CleanSegment cleans one segment (no carriage returns expected): it strips
// escape sequences and control characters, repairs UTF-8 and bounds length.
func CleanSegment(seg []byte) string {
	seg = StripANSI(seg)
	truncated := false
	if len(seg) > MaxLineBytes {
		seg = seg[:MaxLineBytes]
		truncated = true
	}
	clean := true
	for _, c := range seg {
		if c >= 0x80 || (c < 0x20 && c != '\t') || c == 0x7f {
			clean = false
			break
		}
	}
	var s string
	if clean {
		s = string(seg)
	} else {
		var sb strings.Builder
		sb.Grow(len(seg))
		for len(seg) > 0 {
			r, size := utf8.DecodeRune(seg)
			seg = seg[size:]
			switch {
			case r == utf8.RuneError && size == 1:
				if truncated && len(seg) < utf8.UTFMax {
					seg = nil // a rune cut by truncation, not bad input
					continue
				}
				sb.WriteRune(utf8.RuneError)
			case r == '\t':
				sb.WriteByte(' ')
			case r < 0x20 || r == 0x7f:
				// drop other control characters
			default:
				sb.WriteRune(r)
			}
		}
		s = sb.String()
	}
	if truncated {
		s += "…"
	}
	return strings.TrimRight(s, " ")
}

// rankPrefix matches the per-line prefixes that launchers add: "[rank3]:",
// "[1,0]<stdout>:", "0: ", "node12: ", "[default0]:" and
// "10.0.0.1: " style host prefixes.
var rankPrefix = lazyre.New(`^(?:\[\d+,\d+\]<std(?:out|err)>:\s?|\[(?:rank\s*\d+|default\d+|\d+)\]:?\s?|\d{1,5}:\s|[A-Za-z][A-Za-z0-9._-]{0,62}\d:\s|(?:\d{1,3}\.){3}\d{1,3}:\s)`)

// SplitRankPrefix separates a launcher prefix such as "[rank3]:" or "0: "
// from the rest of the line. prefix is "" when the line has none.
func SplitRankPrefix(line string) (prefix, rest string) {
	if len(line) == 0 {
		return "", line
	}
	c := line[0]
	if c != '[' && (c < '0' || c > '9') && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') {
		return "", line
	}
	loc := rankPrefix().FindStringIndex(line)
	if loc == nil {
		return "", line
	}
	return line[:loc[1]], line[loc[1]:]
}
