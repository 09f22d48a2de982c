// Package hook implements the commands Slurm runs: `schedmate hook submit`
// from job_submit.lua and `schedmate hook epilog` from EpilogSlurmctld.
//
// Both fail open: they exit 0 whatever happens, report problems on stderr
// only, and never lose a record: when the database cannot be had within the
// hook's deadline the record goes to the spool beside it.
package hook

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/history"
	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/submitcache"
)

// Steps are the optional services a hook runs besides recording history.
type Steps struct {
	// Estimator, when set, estimates a submitted job's duration.
	Estimator Estimator
	// Recovery, when set, runs after a job's end is recorded (diagnosis,
	// requeue, node checks) under the epilog's deadline.
	Recovery Recovery
	// Reestimate, when set, estimates a resubmission of a job that just
	// ended, so that the submit cache answers with the newer estimate.
	Reestimate Reestimator
}

// NewCmd returns the hook command group with recording only.
func NewCmd(f *factory.Factory) *cobra.Command { return NewCmdWithSteps(f, Steps{}) }

// NewCmdWithSteps returns the hook command group running steps.
func NewCmdWithSteps(f *factory.Factory, steps Steps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Commands Slurm runs (job_submit.lua, EpilogSlurmctld)",
		Long: `Commands for Slurm's hooks. They always exit 0 and print problems on stderr
only, so that schedmate never blocks or loses a job. Records that cannot
reach the database in time are kept in a spool beside it (<db>.spool/) and
applied by the next hook or ` + "`schedmate history list`" + `.`,
	}
	cmd.AddCommand(newSubmitCmd(f, steps.Estimator), newEpilogCmd(f, steps.Recovery, steps.Reestimate))
	return cmd
}

// hookEnv is what both hooks need from the factory.
type hookEnv struct {
	storePath string
	// cachePath is the submit answer cache.
	cachePath string
	open      history.OpenFunc
	deadline  time.Duration
}

// prepare loads the configuration and bounds the database lock wait to a
// quarter of the hook's deadline, so that waiting for the lock leaves time
// for the spool and the hook's other steps.
func prepare(f *factory.Factory, deadline func(*config.Config) time.Duration) (hookEnv, error) {
	cfg, err := f.Config()
	if err != nil {
		return hookEnv{}, err
	}
	d := deadline(cfg)
	if d <= 0 {
		d = time.Second
	}
	if lock := d / 4; cfg.Store.LockTimeout <= 0 || cfg.Store.LockTimeout > lock {
		cfg.Store.LockTimeout = lock
	}
	path, err := f.StorePath()
	if err != nil {
		return hookEnv{}, err
	}
	cache := cfg.Hooks.SubmitCache
	if v, ok := lookupEnv(f.Environ, cacheEnv); ok && v != "" {
		cache = v
	}
	if cache == "" {
		cache = submitcache.ForStore(path)
	}
	return hookEnv{storePath: path, cachePath: cache, open: f.Store, deadline: d}, nil
}

// cacheEnv names the submit cache in slurmctld's environment, for
// job_submit.lua and the hooks alike.
const cacheEnv = "SCHEDMATE_SUBMIT_CACHE"

// places are where the hooks keep records besides the store.
func (h hookEnv) places() history.Places {
	return history.Places{Spool: spool.ForStore(h.storePath), Hits: submitcache.HitsPath(h.cachePath)}
}

// lookupEnv finds name in KEY=VALUE pairs; the last one wins.
func lookupEnv(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// failOpen makes a hook command exit 0 on bad flags, unknown flags (a newer
// job_submit.lua) and panics, reporting them on stderr.
func failOpen(f *factory.Factory, cmd *cobra.Command) {
	cmd.FParseErrWhitelist.UnknownFlags = true
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintf(f.IO.ErrOut, "schedmate: %s: %v\n", c.CommandPath(), err)
		return nil
	})
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		defer recoverTo(f, c.CommandPath())
		if err := run(c, args); err != nil {
			fmt.Fprintf(f.IO.ErrOut, "schedmate: %s: %v\n", c.CommandPath(), err)
		}
		return nil
	}
}

// recoverTo reports a panic on stderr instead of crashing the hook.
func recoverTo(f *factory.Factory, where string) {
	if r := recover(); r != nil {
		fmt.Fprintf(f.IO.ErrOut, "schedmate: %s: internal error: %v\n%s", where, r, debug.Stack())
	}
}

// bounded runs fn and returns its result, or ctx's error when fn does not
// finish in time (fn keeps running; the hook exits soon after). A panic in
// fn becomes an error.
func bounded[T any](ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	type result struct {
		val T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("internal error: %v", r)}
			}
		}()
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.val, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// reportCapture tells the admin, on stderr, where a record went when it did
// not go straight to the database.
func reportCapture(f *factory.Factory, what string, out history.Outcome) {
	if out.Spooled {
		fmt.Fprintf(f.IO.ErrOut, "schedmate: %s spooled, database unavailable: %v\n", what, out.StoreErr)
	}
	if out.Drained.SetAside > 0 {
		fmt.Fprintf(f.IO.ErrOut, "schedmate: %d unreadable spool records set aside (*.bad)\n", out.Drained.SetAside)
	}
}
