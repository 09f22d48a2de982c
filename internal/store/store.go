// Package store keeps schedmate's history in one embedded bbolt database:
// jobs, the audit trail of actions, node-health evidence and small key-value
// buckets that other packages encode themselves.
//
// Transactions are short; a database locked by another process past the
// lock timeout gives ErrLocked, a damaged file gives ErrCorrupt and is never
// written to.
package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// DefaultLockTimeout is how long Open waits for the file lock when
// Options.Timeout is zero.
const DefaultLockTimeout = 5 * time.Second

// Errors callers can test with errors.Is.
var (
	// ErrNotFound means the requested record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrLocked means another process held the database past the lock timeout.
	ErrLocked = errors.New("database is locked by another process")
	// ErrCorrupt means the database file is damaged; schedmate leaves it untouched.
	ErrCorrupt = errors.New("database file is corrupt")
	// ErrSchemaTooNew means the database was written by a newer schedmate.
	ErrSchemaTooNew = errors.New("database schema is newer than this schedmate supports")
	// ErrReadOnly means a write was attempted on a store opened read-only.
	ErrReadOnly = errors.New("store is open read-only")
)

// Options control how a store is opened.
type Options struct {
	// Timeout is how long to wait for the file lock; zero means DefaultLockTimeout.
	Timeout time.Duration
	// ReadOnly opens the database for reading, sharing the lock with other
	// readers. The file must exist.
	ReadOnly bool
	// Logger receives warnings such as skipped corrupt entries; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Store is an open schedmate database.
type Store struct {
	db       *bolt.DB
	path     string
	readOnly bool
	log      *slog.Logger
}

// DefaultPath returns where the database lives: /var/lib/schedmate for root,
// else $XDG_DATA_HOME/schedmate (falling back to ~/.local/share/schedmate).
func DefaultPath() string {
	if os.Geteuid() == 0 {
		return "/var/lib/schedmate/schedmate.db"
	}
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "schedmate", "schedmate.db")
}

// Open opens (and, unless read-only, creates and migrates) the database at path.
func Open(path string, opts Options) (st *Store, err error) {
	if path == "" {
		return nil, errors.New("open store: empty path")
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if err := checkFile(path, opts.ReadOnly); err != nil {
		return nil, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(path, &err)

	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: timeout, ReadOnly: opts.ReadOnly})
	if err != nil {
		return nil, classify(path, err)
	}
	st = &Store{db: db, path: path, readOnly: opts.ReadOnly, log: logger}
	if err := st.migrate(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return st, nil
}

// checkFile prepares the directory for a new database and refuses, before
// bbolt maps it, a file that is truncated or cannot be a database at all.
func checkFile(path string, readOnly bool) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && readOnly:
		return fmt.Errorf("open store %s: %w", path, fs.ErrNotExist)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("create store directory: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("open store %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("open store %s: not a regular file", path)
	case fi.Size() == 0 && readOnly:
		return fmt.Errorf("open store %s: empty file, nothing recorded yet: %w", path, fs.ErrNotExist)
	case fi.Size() == 0:
		return nil
	}
	if err := checkTruncation(path, fi.Size()); err != nil {
		return fmt.Errorf("store %s: %w: %w", path, ErrCorrupt, err)
	}
	return nil
}

// classify maps bbolt's open errors onto the store's error kinds.
func classify(path string, err error) error {
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return fmt.Errorf("open store %s: %w", path, ErrLocked)
	case errors.Is(err, bolterrors.ErrInvalid),
		errors.Is(err, bolterrors.ErrChecksum),
		errors.Is(err, bolterrors.ErrVersionMismatch),
		errors.Is(err, bolterrors.ErrInvalidMapping):
		return fmt.Errorf("store %s: %w: %w", path, ErrCorrupt, err)
	case errors.Is(err, bolterrors.ErrDatabaseReadOnly):
		return fmt.Errorf("store %s: %w", path, ErrReadOnly)
	}
	return fmt.Errorf("open store %s: %w", path, err)
}

// recoverCorrupt turns a panic or memory fault raised by bbolt while reading
// damaged pages into ErrCorrupt.
func recoverCorrupt(path string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("store %s: %w: %v", path, ErrCorrupt, r)
	}
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Close releases the database and its lock.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// view runs fn in a read transaction, reporting damaged pages as ErrCorrupt.
func (s *Store) view(fn func(tx *bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(s.path, &err)
	return s.db.View(fn)
}

// update runs fn in a write transaction, reporting damaged pages as ErrCorrupt.
func (s *Store) update(fn func(tx *bolt.Tx) error) (err error) {
	if s.readOnly {
		return fmt.Errorf("store %s: %w", s.path, ErrReadOnly)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(s.path, &err)
	return s.db.Update(fn)
}
