// Package factory gives commands their dependencies lazily: nothing is
// loaded, opened or started until a command asks for it, so `--help`,
// `completion` and `version` touch no file, database or Slurm daemon.
package factory

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/runner"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
)

// Factory holds the streams and the lazily built dependencies of one
// command invocation.
type Factory struct {
	// IO are the standard streams.
	IO *iostreams.IOStreams
	// JSON is the global --json flag: print machine-readable output.
	JSON bool
	// ConfigFile is the global --config flag.
	ConfigFile string
	// FlagValues are configuration keys set by global flags ("log.level").
	FlagValues map[string]string
	// Environ is the process environment (os.Environ() unless a test sets it).
	Environ []string

	// Runner runs external commands; tests replace it with a stub.
	Runner runner.Runner
	// SlurmOverride, when set, is returned by Slurm() (tests use a fake).
	SlurmOverride slurm.Client

	configOnce sync.Once
	loaded     *config.Loaded
	configErr  error

	storeMu sync.Mutex
	st      *store.Store
	stRO    bool

	logOnce  sync.Once
	logger   *slog.Logger
	logClose io.Closer
	logFile  string
}

// New returns a factory over the given streams and the process environment.
func New(io *iostreams.IOStreams) *Factory {
	return &Factory{IO: io, Environ: os.Environ(), Runner: runner.Exec{}, FlagValues: map[string]string{}}
}

// Loaded returns the loaded configuration with the origin of every value.
func (f *Factory) Loaded() (*config.Loaded, error) {
	f.configOnce.Do(func() {
		f.loaded, f.configErr = config.Load(config.LoadOptions{File: f.ConfigFile, Environ: f.Environ, Flags: f.FlagValues})
		if f.configErr != nil {
			f.configErr = exitcode.New(exitcode.Usage, f.configErr)
		}
	})
	return f.loaded, f.configErr
}

// Config returns the configuration, loading it on first use.
func (f *Factory) Config() (*config.Config, error) {
	l, err := f.Loaded()
	if err != nil {
		return nil, err
	}
	return l.Config, nil
}

// StorePath returns the database path from the configuration, or the
// default for this user.
func (f *Factory) StorePath() (string, error) {
	cfg, err := f.Config()
	if err != nil {
		return "", err
	}
	if cfg.Store.Path != "" {
		return cfg.Store.Path, nil
	}
	return store.DefaultPath(), nil
}

// Store opens the history database read-write on first use; the root
// command closes it when the command ends.
func (f *Factory) Store() (*store.Store, error) { return f.openStore(false) }

// StoreReadOnly opens the database for reading only, sharing the lock with
// other readers. A read-write handle already open is returned as is.
func (f *Factory) StoreReadOnly() (*store.Store, error) { return f.openStore(true) }

func (f *Factory) openStore(readOnly bool) (*store.Store, error) {
	f.storeMu.Lock()
	defer f.storeMu.Unlock()
	if f.st != nil && (!f.stRO || readOnly) {
		return f.st, nil
	}
	if f.st != nil {
		f.st.Close()
		f.st = nil
	}
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	path, err := f.StorePath()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(path, store.Options{Timeout: cfg.Store.LockTimeout, ReadOnly: readOnly})
	if err != nil {
		return nil, StoreError(err)
	}
	f.st, f.stRO = st, readOnly
	return st, nil
}

// ReleaseStore closes the database handle, if one is open, so that other
// processes may take its lock; the next Store call opens it again.
func (f *Factory) ReleaseStore() {
	f.storeMu.Lock()
	defer f.storeMu.Unlock()
	if f.st != nil {
		f.st.Close()
		f.st = nil
	}
}

// StoreError maps a store error to the exit code it deserves.
func StoreError(err error) error {
	switch {
	case errors.Is(err, store.ErrLocked):
		return exitcode.New(exitcode.Locked, err)
	case errors.Is(err, store.ErrCorrupt):
		return exitcode.New(exitcode.DataErr, err)
	case errors.Is(err, os.ErrNotExist):
		return exitcode.New(exitcode.NotFound, err)
	}
	return err
}

// Slurm returns the Slurm client configured for this host.
func (f *Factory) Slurm() (slurm.Client, error) {
	if f.SlurmOverride != nil {
		return f.SlurmOverride, nil
	}
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	return &slurm.CLI{Runner: f.Runner, BinDir: cfg.Slurm.BinDir, Timeout: cfg.Slurm.Timeout}, nil
}

// Logger returns schedmate's diagnostic logger: to log.file when set, else
// to stderr, at log.level.
func (f *Factory) Logger() *slog.Logger {
	f.logOnce.Do(func() {
		level, file := "warn", ""
		if cfg, err := f.Config(); err == nil {
			level, file = cfg.Log.Level, cfg.Log.File
		}
		if f.logFile != "" {
			file = f.logFile
		}
		var w io.Writer = f.IO.ErrOut
		if file != "" {
			if fh, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
				w, f.logClose = fh, fh
			} else {
				fmt.Fprintf(f.IO.ErrOut, "schedmate: cannot open log file %s: %v; logging to stderr\n", file, err)
			}
		}
		f.logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: parseLevel(level)}))
	})
	return f.logger
}

// LogToFile redirects the logger to path (used while a full-screen view owns
// the terminal). It must be called before Logger is first used.
func (f *Factory) LogToFile(path string) { f.logFile = path }

// Close releases what the factory opened.
func (f *Factory) Close() {
	f.ReleaseStore()
	if f.logClose != nil {
		f.logClose.Close()
	}
}

func parseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	case "error":
		return slog.LevelError
	}
	return slog.LevelWarn
}
