package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/internal/submitcache"
	"github.com/schedmate/schedmate/slurm"
)

// Spool record kinds.
const (
	kindSubmission = "submission"
	kindEnd        = "end"
)

// RecordEnd writes a job's end to the store, matched to its submission when
// one is found, and returns the stored job. Recording the same end again is
// harmless.
func RecordEnd(st *store.Store, end *End) (*store.Job, error) {
	job, _, err := recordEnd(st, end)
	return job, err
}

// recordEnd is RecordEnd that also returns the submission matched, if any.
func recordEnd(st *store.Store, end *End) (*store.Job, *Submission, error) {
	job := end.Job
	sub, stale, err := matchSubmission(st, end.UID, &job)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range stale {
		if err := st.DeleteKV(submissionsBucket, k); err != nil {
			return nil, nil, fmt.Errorf("forget old submission: %w", err)
		}
	}
	if sub != nil {
		if group := matchGroup(&job); sub.MatchedJob != group {
			sub.MatchedJob = group
			if err := RecordSubmission(st, sub); err != nil {
				return nil, nil, fmt.Errorf("mark submission matched to job %s: %w", job.JobID, err)
			}
		}
	}
	var stored *store.Job
	err = st.UpdateJob(job.JobID, func(j *store.Job) error {
		slurmState := end.SlurmState
		if slurmState == "" && j.State != "" && j.RequeueCount == job.RequeueCount {
			// This run's end is already recorded, perhaps with the state
			// Slurm gave since: an end read again from the spool keeps it.
			slurmState = j.State
		}
		mergeJob(j, &job, true)
		if sub != nil {
			fillFromSubmission(j, sub)
		}
		finish(j, &job, slurmState)
		stored = j
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("record end of job %s: %w", job.JobID, err)
	}
	return stored, sub, nil
}

// finish sets what the end decides even when it is a zero value: the exit
// status, and the state derived from it.
func finish(j, end *store.Job, slurmState string) {
	j.ExitCode, j.Signal = end.ExitCode, end.Signal
	j.State = DeriveState(slurmState, j.ExitCode, j.Signal, j.Duration(), j.TimeLimit)
	if (j.State == "CANCELLED" || j.State == "TIMEOUT") && j.Signal == 0 && j.ExitCode > 128 && j.ExitCode <= 128+15 {
		// The shell exited 128+signal after the signal Slurm sent: record it
		// the way Slurm's accounting does, as killed by that signal.
		j.ExitCode, j.Signal = 0, j.ExitCode-128
	}
}

// fillFromSubmission copies what only the submit hook saw onto a job.
func fillFromSubmission(j *store.Job, sub *Submission) {
	j.Script = sub.Script
	if len(sub.Argv) > 0 {
		j.SubmitLine = strings.Join(sub.Argv, " ")
	}
	j.TimeLimit = sub.TimeLimit
	if j.Submit.IsZero() {
		j.Submit = sub.Time
	}
	j.Fingerprint, j.FingerprintHash = sub.Fingerprint, sub.FingerprintHash
	if sub.Estimate != nil {
		e := *sub.Estimate
		j.Estimate = &e
	}
	if len(sub.Metadata) > 0 {
		if j.Metadata == nil {
			j.Metadata = map[string]string{}
		}
		maps.Copy(j.Metadata, sub.Metadata)
	}
	if gpus := slurm.ParseGPUs(sub.Gres); gpus > 0 {
		j.NumGPUs = gpus * max(j.NumNodes, 1)
	}
}

// DrainSpool applies the records hooks spooled while the store was
// unavailable. Run it with the store open read-write; applying a record
// twice is harmless.
func DrainSpool(st *store.Store, dir string) (spool.DrainResult, error) {
	return spool.New(dir).Drain(func(rec spool.Record) error {
		switch rec.Kind {
		case kindSubmission:
			var sub Submission
			if err := json.Unmarshal(rec.Data, &sub); err != nil {
				return fmt.Errorf("%w: decode submission: %v", spool.ErrSkip, err)
			}
			if err := sub.validate(); err != nil {
				return fmt.Errorf("%w: %v", spool.ErrSkip, err)
			}
			return RecordSubmission(st, &sub)
		case kindEnd:
			var end End
			if err := json.Unmarshal(rec.Data, &end); err != nil || end.Job.JobID == "" {
				return fmt.Errorf("%w: decode job end: %v", spool.ErrSkip, err)
			}
			if _, err := RecordEnd(st, &end); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: unknown kind %q", spool.ErrSkip, rec.Kind)
		}
		return nil
	})
}

// OpenFunc opens the store read-write.
type OpenFunc func() (*store.Store, error)

// Places are where hooks keep records besides the store.
type Places struct {
	// Spool holds records that could not reach the store.
	Spool string
	// Hits is job_submit.lua's log of submissions answered from the
	// submit cache; empty when there is none.
	Hits string
}

// Outcome says where a hook's record went.
type Outcome struct {
	// Spooled is true when the record went to the spool; StoreErr says why.
	Spooled  bool
	StoreErr error
	// Drained counts the spooled records applied before this one.
	Drained spool.DrainResult
	// Hits counts the cache hits recorded before this one.
	Hits submitcache.DrainResult
	// Matched is the submission a job's end was matched to, if any.
	Matched *Submission
}

// CaptureSubmission records sub in the store, or in the spool at at.Spool
// when the store cannot be opened or written before ctx ends.
func CaptureSubmission(ctx context.Context, open OpenFunc, at Places, sub *Submission) (Outcome, error) {
	if err := sub.validate(); err != nil {
		return Outcome{}, err
	}
	return capture(ctx, open, at, kindSubmission, sub, func(st *store.Store) error {
		return RecordSubmission(st, sub)
	})
}

// CaptureEnd records end like CaptureSubmission and returns the job as
// stored, or, when spooled, as the environment describes it.
func CaptureEnd(ctx context.Context, open OpenFunc, at Places, end *End) (*store.Job, Outcome, error) {
	if end.Job.JobID == "" {
		return nil, Outcome{}, errors.New("record job end: no job id")
	}
	var job *store.Job
	var matched *Submission
	out, err := capture(ctx, open, at, kindEnd, end, func(st *store.Store) error {
		var err error
		job, matched, err = recordEnd(st, end)
		return err
	})
	out.Matched = matched
	if job == nil {
		j := end.Job
		finish(&j, &end.Job, end.SlurmState)
		job = &j
	}
	return job, out, err
}

// capture runs apply against the store when it opens before ctx ends and
// spools payload otherwise. Cache hits are recorded first, then the spool,
// so that every end finds the submission it belongs to. The error is
// non-nil only when the record could be written nowhere.
func capture(ctx context.Context, open OpenFunc, at Places, kind string, payload any, apply func(*store.Store) error) (Outcome, error) {
	type result struct {
		drained spool.DrainResult
		hits    submitcache.DrainResult
		err     error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		st, err := open()
		if err == nil && at.Hits != "" {
			r.hits, err = DrainHits(st, at.Hits)
		}
		if err == nil {
			if r.drained, err = DrainSpool(st, at.Spool); err == nil {
				err = apply(st)
			}
		}
		r.err = err
		done <- r
	}()
	var out Outcome
	select {
	case r := <-done:
		out.Drained, out.Hits = r.drained, r.hits
		if r.err == nil {
			return out, nil
		}
		out.StoreErr = r.err
	case <-ctx.Done():
		out.StoreErr = fmt.Errorf("store not available in time: %w", ctx.Err())
	}
	out.Spooled = true
	if err := spool.New(at.Spool).Write(kind, payload); err != nil {
		return out, fmt.Errorf("record lost: store: %v; spool: %w", out.StoreErr, err)
	}
	return out, nil
}
