package submitcache

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A hit log lists the submissions job_submit.lua answered from the cache,
// one line each, for the next writer of the history to record:
//
//	v1 TAB <unix s> TAB <sequence> TAB <key> TAB <uid> TAB <user> TAB <name>
//	   TAB <work dir> TAB <partition> TAB <time limit, min> TAB <gres>
//	   TAB <nodes> [TAB <argv element>]...
//
// Fields other than the version, times and key are percent-escaped ("%",
// tab, CR and LF as %XX). Lua appends a line with one write per submission.
const hitVersion = "v1"

// hitFields is the number of fixed fields before the argv elements.
const hitFields = 12

// drainingInfix marks a hit log taken for draining.
const drainingInfix = ".draining-"

// HitsPath returns the hit log that belongs to a cache file.
func HitsPath(cachePath string) string { return cachePath + ".hits" }

// Hit is one submission answered from the cache.
type Hit struct {
	// Time is when the submission was seen; the sequence number that Lua
	// keeps orders hits within one second (as nanoseconds).
	Time      time.Time
	Key       string
	UID       string
	User      string
	Name      string
	WorkDir   string
	Partition string
	// TimeLimit is the requested limit in minutes as Slurm gave it.
	TimeLimit string
	Gres      string
	Nodes     string
	Argv      []string
}

// ParseHit reads one hit log line.
func ParseHit(line string) (Hit, error) {
	f := strings.Split(strings.TrimRight(line, "\r\n"), "\t")
	if len(f) < hitFields || f[0] != hitVersion {
		return Hit{}, fmt.Errorf("hit log line: want %s with %d fields, got %d fields", hitVersion, hitFields, len(f))
	}
	sec, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || sec <= 0 {
		return Hit{}, fmt.Errorf("hit log line: bad time %q", f[1])
	}
	seq, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || seq < 0 {
		return Hit{}, fmt.Errorf("hit log line: bad sequence %q", f[2])
	}
	if !ValidKey(f[3]) {
		return Hit{}, fmt.Errorf("hit log line: bad key %q", f[3])
	}
	dec := make([]string, 0, len(f)-4)
	for _, s := range f[4:] {
		v, err := unescape(s)
		if err != nil {
			return Hit{}, fmt.Errorf("hit log line: %w", err)
		}
		dec = append(dec, v)
	}
	h := Hit{
		Time: time.Unix(sec, seq%int64(time.Second)), Key: f[3],
		UID: dec[0], User: dec[1], Name: dec[2], WorkDir: dec[3], Partition: dec[4],
		TimeLimit: dec[5], Gres: dec[6], Nodes: dec[7],
	}
	if len(dec) > 8 {
		h.Argv = dec[8:]
	}
	if h.UID == "" && h.User == "" {
		return Hit{}, errors.New("hit log line: neither uid nor user")
	}
	return h, nil
}

// unescape decodes %XX escapes.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	v, err := url.PathUnescape(s)
	if err != nil {
		return "", fmt.Errorf("bad escape in %q: %w", s, err)
	}
	return v, nil
}

// DrainResult counts what DrainHits did.
type DrainResult struct {
	Applied int
	// Bad lines could not be parsed and were dropped.
	Bad int
}

// DrainHits hands the hits logged so far to apply, in batches, and removes
// them once apply succeeds. The log is first renamed, so that Lua starts a
// new one; a log left by a drain that failed is taken up again. When apply
// fails, the renamed log stays for the next drain (apply must be
// idempotent).
func DrainHits(path string, batch int, apply func([]Hit) error) (DrainResult, error) {
	var res DrainResult
	taken := fmt.Sprintf("%s%s%020d-%d", path, drainingInfix, time.Now().UnixNano(), os.Getpid())
	if err := os.Rename(path, taken); err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("take hit log %s: %w", path, err)
	}
	logs, err := filepath.Glob(globEscape(path) + drainingInfix + "*")
	if err != nil {
		return res, fmt.Errorf("list hit logs %s: %w", path, err)
	}
	sort.Strings(logs)
	for _, p := range logs {
		if err := drainOne(p, max(batch, 1), apply, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// drainOne applies one taken log. A line Lua was still writing when the log
// was renamed is picked up by reading again from where the first pass
// stopped before the log is removed.
func drainOne(path string, batch int, apply func([]Hit) error, res *DrainResult) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // another drain took it
	}
	if err != nil {
		return fmt.Errorf("read hit log %s: %w", path, err)
	}
	defer f.Close()
	r := &lineReader{r: bufio.NewReaderSize(f, 64<<10)}
	var pending []Hit
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		if err := apply(pending); err != nil {
			return fmt.Errorf("apply hit log %s: %w", path, err)
		}
		res.Applied += len(pending)
		pending = pending[:0]
		return nil
	}
	for pass := 0; pass < 2; pass++ {
		for {
			line, err := r.next()
			if line != "" {
				if h, perr := ParseHit(line); perr == nil {
					pending = append(pending, h)
				} else {
					res.Bad++
				}
				if len(pending) >= batch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("read hit log %s: %w", path, err)
			}
		}
		if pass == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove hit log %s: %w", path, err)
	}
	return nil
}

// maxHitLine bounds one hit log line; longer lines are dropped as bad.
const maxHitLine = 128 << 10

// lineReader returns complete lines; an unterminated tail is kept and
// completed by what a later read finds.
type lineReader struct {
	r       *bufio.Reader
	partial []byte
}

// next returns the next complete line, or "\x00" for one too long.
func (l *lineReader) next() (string, error) {
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(l.partial) <= maxHitLine {
			l.partial = append(l.partial, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return "", err // the tail stays in partial
		}
		line := string(l.partial)
		l.partial = l.partial[:0]
		if len(line) > maxHitLine {
			return "\x00", nil
		}
		return line, nil
	}
}
