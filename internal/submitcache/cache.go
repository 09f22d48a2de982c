// Package submitcache keeps the submit hook's answers where job_submit.lua
// can apply them without starting a process: a small tab-separated file of
// entries keyed by what Lua computes cheaply (uid, batch script length and
// checksum, working directory, job name), each holding the key=value lines
// that `schedmate hook submit` printed for that submission.
//
// File format, one entry per line after a header whose generation changes
// on every rewrite (Lua reloads when the header differs):
//
//	#schedmate-submit-cache v1 <generation>
//	<key> TAB <expires, unix s> TAB <written, unix s> [TAB <answer>]...
//
// Keys and answers hold no tab, CR or LF. The file is replaced atomically
// (temporary file, rename); writers serialise on an advisory lock and give
// up quietly when it is busy, since a missing entry only costs one slow
// submission. A missing, damaged or oversized file reads as empty.
package submitcache

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FileName is the cache's name beside the history database.
const FileName = "submit-answers.tsv"

// header starts every cache file; job_submit.lua checks it.
const header = "#schedmate-submit-cache v1"

// Bounds on what is kept and read.
const (
	// DefaultMaxEntries bounds the entries kept; the least recently
	// written are dropped first.
	DefaultMaxEntries = 2048
	// DefaultTTL is how long an entry is applied after it was written.
	DefaultTTL = 24 * time.Hour
	// MaxFileBytes bounds the file read; a larger file reads as empty.
	MaxFileBytes = 4 << 20
	// MaxLineBytes bounds one entry.
	MaxLineBytes = 8 << 10
	// lockWait bounds the wait for another writer.
	lockWait = 200 * time.Millisecond
)

// ErrBusy is returned by Put when another writer holds the lock too long.
var ErrBusy = errors.New("submit cache busy")

// Entry is one cached answer.
type Entry struct {
	Key     string
	Written time.Time
	Expires time.Time
	// Answers are the key=value lines job_submit.lua applies.
	Answers []string
}

// Cache is a cache file and its bounds.
type Cache struct {
	Path       string
	MaxEntries int
	TTL        time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// New returns the cache at path with the default bounds.
func New(path string) *Cache {
	return &Cache{Path: path, MaxEntries: DefaultMaxEntries, TTL: DefaultTTL}
}

// ForStore returns the cache path beside a database file.
func ForStore(dbPath string) string { return filepath.Join(filepath.Dir(dbPath), FileName) }

func (c *Cache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// ValidKey reports whether key can be stored: non-empty, one line, no tab.
func ValidKey(key string) bool {
	return key != "" && len(key) <= MaxLineBytes/2 && !strings.ContainsAny(key, "\t\r\n")
}

// Read returns the live entries of the cache file at path, skipping
// damaged lines. A missing file has none; an unreadable or oversized one is
// an error (callers treat it as empty).
func Read(path string, now time.Time) ([]Entry, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	return parse(data, now), nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read submit cache %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read submit cache %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("read submit cache %s: not a regular file of at most %d bytes", path, MaxFileBytes)
	}
	data := make([]byte, 0, fi.Size())
	buf := bytes.NewBuffer(data)
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileBytes+1)); err != nil {
		return nil, fmt.Errorf("read submit cache %s: %w", path, err)
	}
	if buf.Len() > MaxFileBytes {
		return nil, fmt.Errorf("read submit cache %s: exceeds %d bytes", path, MaxFileBytes)
	}
	return buf.Bytes(), nil
}

// parse reads entries from a cache file's content; a file without the
// header, and lines that do not parse or have expired, give nothing.
func parse(data []byte, now time.Time) []Entry {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), header+" ") {
		return nil
	}
	var out []Entry
	for sc.Scan() {
		e, ok := parseEntry(sc.Text())
		if ok && now.Before(e.Expires) {
			out = append(out, e)
		}
	}
	return out
}

func parseEntry(line string) (Entry, bool) {
	f := strings.Split(line, "\t")
	if len(f) < 3 || !ValidKey(f[0]) {
		return Entry{}, false
	}
	exp, err1 := strconv.ParseInt(f[1], 10, 64)
	wr, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return Entry{}, false
	}
	e := Entry{Key: f[0], Expires: time.Unix(exp, 0), Written: time.Unix(wr, 0)}
	for _, a := range f[3:] {
		if validAnswer(a) {
			e.Answers = append(e.Answers, a)
		}
	}
	return e, true
}

// validAnswer accepts "name=value" with a lower-case field name.
func validAnswer(a string) bool {
	k, _, ok := strings.Cut(a, "=")
	if !ok || k == "" {
		return false
	}
	for _, c := range k {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// Put stores answers under key, replacing its entry, dropping expired
// entries and the least recently written beyond MaxEntries. Answers with a
// tab or line break, or not of the form name=value, are left out.
func (c *Cache) Put(key string, answers []string) error {
	if !ValidKey(key) {
		return fmt.Errorf("submit cache: invalid key %q", key)
	}
	var kept []string
	for _, a := range answers {
		if validAnswer(a) && !strings.ContainsAny(a, "\t\r\n") {
			kept = append(kept, a)
		}
	}
	return c.update(func(entries []Entry, now time.Time) []Entry {
		entries = slices.DeleteFunc(entries, func(e Entry) bool { return e.Key == key })
		return append(entries, Entry{Key: key, Written: now, Expires: now.Add(c.ttl()), Answers: kept})
	})
}

// Forget removes key's entry, if any.
func (c *Cache) Forget(key string) error {
	return c.update(func(entries []Entry, _ time.Time) []Entry {
		return slices.DeleteFunc(entries, func(e Entry) bool { return e.Key == key })
	})
}

func (c *Cache) ttl() time.Duration {
	if c.TTL > 0 {
		return c.TTL
	}
	return DefaultTTL
}

// update rewrites the file with change applied to its live entries, under
// the writers' lock.
func (c *Cache) update(change func([]Entry, time.Time) []Entry) error {
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
		return fmt.Errorf("submit cache: %w", err)
	}
	unlock, err := lock(c.Path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	now := c.now()
	entries, err := Read(c.Path, now)
	if err != nil {
		entries = nil // a damaged file is replaced
	}
	entries = change(entries, now)
	slices.SortStableFunc(entries, func(a, b Entry) int { return a.Written.Compare(b.Written) })
	if max := c.MaxEntries; max > 0 && len(entries) > max {
		entries = entries[len(entries)-max:]
	}
	return writeAtomic(c.Path, encode(entries, now))
}

func encode(entries []Entry, now time.Time) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %d\n", header, now.UnixNano())
	for _, e := range entries {
		line := e.Key + "\t" + strconv.FormatInt(e.Expires.Unix(), 10) + "\t" + strconv.FormatInt(e.Written.Unix(), 10)
		for _, a := range e.Answers {
			line += "\t" + a
		}
		if len(line) < MaxLineBytes {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write submit cache %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write submit cache %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write submit cache %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write submit cache %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write submit cache %s: %w", path, err)
	}
	return nil
}

// lock takes the writers' advisory lock, waiting at most lockWait.
func lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("submit cache lock %s: %w", path, err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, ErrBusy
			}
			return nil, fmt.Errorf("submit cache lock %s: %w", path, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
