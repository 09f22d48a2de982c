// Package spool keeps records durably in a directory, one file each, for a
// later process to apply. Slurm's hooks use it when the database is locked
// or damaged, so that no submission or job end is ever lost.
//
// A record is written to a temporary file, synced and renamed into place, so
// a reader sees either the whole record or nothing. Applying a record and
// deleting its file are not atomic together: a record may be applied twice,
// so apply functions must be idempotent.
package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// MaxRecordBytes bounds the size of one record file; larger files are set
// aside as unreadable.
const MaxRecordBytes = 1 << 20

const (
	recordExt  = ".json"
	badExt     = ".bad"
	tempPrefix = ".tmp-"
)

// ErrSkip, returned by an apply function, sets the record aside (like an
// unreadable one) instead of stopping the drain: for records this build
// does not understand.
var ErrSkip = errors.New("record set aside")

// Record is one spooled entry.
type Record struct {
	// Name is the record's file name in the spool.
	Name string `json:"-"`
	// Kind tells the applier how to decode Data.
	Kind string `json:"kind"`
	// Time is when the record was written.
	Time time.Time `json:"time"`
	// Data is the record's JSON payload.
	Data json.RawMessage `json:"data"`
}

// Spool is a spool directory.
type Spool struct {
	dir string
}

// New returns the spool kept in dir; nothing is created until Write.
func New(dir string) *Spool { return &Spool{dir: dir} }

// ForStore returns the spool directory that belongs beside a database file.
func ForStore(dbPath string) string { return dbPath + ".spool" }

// Dir returns the spool's directory.
func (s *Spool) Dir() string { return s.dir }

// Write stores payload, encoded as JSON, as a record of kind. It returns once
// the record is on disk.
func (s *Spool) Write(kind string, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("spool %s record: encode: %w", kind, err)
	}
	now := time.Now()
	rec, err := json.Marshal(Record{Kind: kind, Time: now, Data: data})
	if err != nil {
		return fmt.Errorf("spool %s record: encode: %w", kind, err)
	}
	if len(rec) > MaxRecordBytes {
		return fmt.Errorf("spool %s record: %d bytes exceeds the %d-byte limit", kind, len(rec), MaxRecordBytes)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create spool %s: %w", s.dir, err)
	}
	tmp, err := os.CreateTemp(s.dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("spool %s record: %w", kind, err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(rec); err != nil {
		tmp.Close()
		return fmt.Errorf("write spool file %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync spool file %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close spool file %s: %w", tmp.Name(), err)
	}
	// The time prefix keeps records in write order; the temp file's random
	// suffix keeps concurrent writers apart.
	name := fmt.Sprintf("%020d-%d-%s%s", now.UnixNano(), os.Getpid(), strings.TrimPrefix(filepath.Base(tmp.Name()), tempPrefix), recordExt)
	if err := os.Rename(tmp.Name(), filepath.Join(s.dir, name)); err != nil {
		return fmt.Errorf("spool %s record: %w", kind, err)
	}
	return syncDir(s.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync spool %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync spool %s: %w", dir, err)
	}
	return nil
}

// Pending returns the names of the records waiting in the spool, oldest first.
func (s *Spool) Pending() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read spool %s: %w", s.dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), recordExt) && !strings.HasPrefix(e.Name(), tempPrefix) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// DrainResult counts what Drain did.
type DrainResult struct {
	// Applied records were handed to apply and removed.
	Applied int
	// SetAside records could not be read, decoded or applied (ErrSkip); they
	// are renamed with a ".bad" suffix and kept for inspection.
	SetAside int
}

// Drain hands every pending record to apply, oldest first, removing each
// once apply succeeds. It stops at the first error from apply other than
// ErrSkip, leaving that record and the later ones in place.
func (s *Spool) Drain(apply func(Record) error) (DrainResult, error) {
	var res DrainResult
	names, err := s.Pending()
	if err != nil {
		return res, err
	}
	for _, name := range names {
		path := filepath.Join(s.dir, name)
		rec, err := readRecord(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // another process drained it
		}
		if err == nil {
			rec.Name = name
			err = apply(rec)
			if err != nil && !errors.Is(err, ErrSkip) {
				return res, fmt.Errorf("apply spool record %s: %w", name, err)
			}
		}
		if err != nil {
			if rerr := os.Rename(path, path+badExt); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return res, fmt.Errorf("set aside spool file %s: %w", path, rerr)
			}
			res.SetAside++
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("remove applied spool file %s: %w", path, err)
		}
		res.Applied++
	}
	return res, nil
}

func readRecord(path string) (Record, error) {
	var rec Record
	f, err := os.Open(path)
	if err != nil {
		return rec, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxRecordBytes+1))
	if err != nil {
		return rec, fmt.Errorf("read spool file %s: %w", path, err)
	}
	if len(data) > MaxRecordBytes {
		return rec, fmt.Errorf("spool file %s exceeds %d bytes", path, MaxRecordBytes)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("decode spool file %s: %w", path, err)
	}
	if rec.Kind == "" {
		return rec, fmt.Errorf("spool file %s has no kind", path)
	}
	return rec, nil
}
