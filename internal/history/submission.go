// Package history records what Slurm's hooks see: a submission from
// job_submit.lua (before Slurm assigns a job id) and the job's end from
// EpilogSlurmctld, matched to each other and written to the store as one
// job entry. When the store cannot be opened in time, records go to a spool
// that the next writer drains.
package history

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/store"
)

// submissionsBucket is the key-value bucket holding submissions.
const submissionsBucket = "submissions"

// submissionTTL is how long a submission is kept: older ones are deleted
// when a later end of the same job name is matched.
const submissionTTL = 60 * 24 * time.Hour

// matchSlack tolerates clock differences between the submit hook and the
// times Slurm reports for the job.
const matchSlack = time.Minute

// Submission is what the submit hook knows about a job before it has an id.
type Submission struct {
	UID       string        `json:"uid,omitempty"`
	User      string        `json:"user,omitempty"`
	Name      string        `json:"name,omitempty"`
	WorkDir   string        `json:"work_dir,omitempty"`
	Partition string        `json:"partition,omitempty"`
	Script    string        `json:"script,omitempty"`
	Argv      []string      `json:"argv,omitempty"`
	TimeLimit time.Duration `json:"time_limit,omitempty"`
	Gres      string        `json:"gres,omitempty"`
	Nodes     string        `json:"nodes,omitempty"`
	// Time is when the submission was seen.
	Time            time.Time             `json:"time"`
	Fingerprint     string                `json:"fingerprint,omitempty"`
	FingerprintHash string                `json:"fingerprint_hash,omitempty"`
	Metadata        map[string]string     `json:"metadata,omitempty"`
	Estimate        *store.EstimateRecord `json:"estimate,omitempty"`
	// MatchedJob is the job (or array job) id whose end matched this
	// submission; empty while unmatched.
	MatchedJob string `json:"matched_job,omitempty"`
	// CacheKey is job_submit.lua's key for the submit answer cache; a
	// submission with one and not FromCache is kept as the template that
	// later cache hits of the same key are recorded from.
	CacheKey string `json:"cache_key,omitempty"`
	// FromCache is true when job_submit.lua answered from the cache.
	FromCache bool `json:"from_cache,omitempty"`
}

// identity is who submitted: the numeric uid when known, else the user name.
func identity(uid, user string) string {
	if uid != "" {
		return "uid:" + uid
	}
	return "user:" + user
}

// submissionPrefix groups the submissions that one job end may match.
func submissionPrefix(uid, user, name, workDir string) string {
	clean := func(s string) string { return strings.ReplaceAll(s, "\x00", "") }
	return identity(uid, user) + "\x00" + clean(name) + "\x00" + clean(workDir) + "\x00"
}

// key orders one identity's submissions by time.
func (s *Submission) key() string {
	ns := s.Time.UnixNano()
	if ns < 0 {
		ns = 0
	}
	return submissionPrefix(s.UID, s.User, s.Name, s.WorkDir) + string(binary.BigEndian.AppendUint64(nil, uint64(ns)))
}

func (s *Submission) validate() error {
	if s.UID == "" && s.User == "" {
		return errors.New("record submission: neither uid nor user given")
	}
	if s.Time.IsZero() {
		return errors.New("record submission: no submit time")
	}
	return nil
}

// RecordSubmission stores a submission. Recording the same submission again
// is harmless.
func RecordSubmission(st *store.Store, sub *Submission) error {
	if err := sub.validate(); err != nil {
		return err
	}
	val, err := json.Marshal(sub)
	if err != nil {
		return fmt.Errorf("record submission: encode: %w", err)
	}
	if err := st.PutKV(submissionsBucket, sub.key(), val); err != nil {
		return fmt.Errorf("record submission of %q: %w", sub.Name, err)
	}
	if sub.CacheKey != "" && !sub.FromCache && sub.MatchedJob == "" {
		if err := st.PutKV(templatesBucket, sub.CacheKey, val); err != nil {
			return fmt.Errorf("record submission of %q as cache template: %w", sub.Name, err)
		}
	}
	return nil
}

// ScriptPath returns the batch script as the user named it: the first
// element of the submitting command line, made absolute against the job's
// working directory. It is empty when the command line is unknown.
func ScriptPath(argv []string, workDir string) string {
	if len(argv) == 0 || argv[0] == "" {
		return ""
	}
	if filepath.IsAbs(argv[0]) || workDir == "" {
		return argv[0]
	}
	return filepath.Join(workDir, argv[0])
}

// matchSubmission finds the submission a job end belongs to: one already
// matched to the same job or array (array tasks and requeues share their
// submission), else the most recent unmatched one made before the job's
// reference time. It returns nil when none fits. It also returns the keys
// of submissions in the same group older than submissionTTL.
func matchSubmission(st *store.Store, uid string, job *store.Job) (match *Submission, stale []string, err error) {
	group := matchGroup(job)
	ref := firstSet(job.Submit, job.Start, job.End, time.Now()).Add(matchSlack)
	expired := ref.Add(-submissionTTL)
	var same, unmatched *Submission
	err = st.ScanKV(submissionsBucket, submissionPrefix(uid, job.User, job.Name, job.WorkDir), func(k string, v []byte) error {
		sub := &Submission{}
		if err := json.Unmarshal(v, sub); err != nil {
			stale = append(stale, k) // a damaged entry can never match
			return nil
		}
		switch {
		case sub.Time.Before(expired):
			stale = append(stale, k)
		case sub.MatchedJob == group:
			same = sub
		case sub.MatchedJob == "" && !sub.Time.After(ref):
			unmatched = sub
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("find submission of job %s: %w", job.JobID, err)
	}
	if same != nil {
		return same, stale, nil
	}
	return unmatched, stale, nil
}

// matchGroup names the jobs that share one submission: all tasks of an
// array, all runs of a requeued job.
func matchGroup(job *store.Job) string {
	if job.ArrayJobID != "" {
		return job.ArrayJobID
	}
	return job.JobID
}

func firstSet(times ...time.Time) time.Time {
	for _, t := range times {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
