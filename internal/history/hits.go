package history

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/internal/submitcache"
)

// templatesBucket holds, per submit cache key, the last submission that
// `hook submit` answered itself: cache hits are recorded from it.
const templatesBucket = "submit_templates"

// hitBatch is how many cache hits are written in one transaction.
const hitBatch = 512

// DrainHits records the submissions job_submit.lua answered from the submit
// cache, logged at path, each filled from its key's template (fingerprint,
// metadata, estimate). Run it with the store open read-write before
// matching ends; recording a hit twice is harmless.
func DrainHits(st *store.Store, path string) (submitcache.DrainResult, error) {
	return submitcache.DrainHits(path, hitBatch, func(hits []submitcache.Hit) error {
		return RecordHits(st, hits)
	})
}

// RecordHits stores the submissions of cache hits in one transaction.
func RecordHits(st *store.Store, hits []submitcache.Hit) error {
	templates := map[string]*Submission{}
	subs := make([]*Submission, 0, len(hits))
	for i := range hits {
		h := &hits[i]
		tmpl, seen := templates[h.Key]
		if !seen {
			var err error
			if tmpl, err = template(st, h.Key); err != nil {
				return err
			}
			templates[h.Key] = tmpl
		}
		subs = append(subs, fromHit(h, tmpl))
	}
	return st.BatchKV(submissionsBucket, func(put func(k string, v []byte) error) error {
		for _, sub := range subs {
			val, err := json.Marshal(sub)
			if err != nil {
				return fmt.Errorf("record cache hit: encode: %w", err)
			}
			if err := put(sub.key(), val); err != nil {
				return fmt.Errorf("record cache hit of %q: %w", sub.Name, err)
			}
		}
		return nil
	})
}

// template returns the submission recorded for a cache key, or nil.
func template(st *store.Store, key string) (*Submission, error) {
	val, ok, err := st.GetKV(templatesBucket, key)
	if err != nil {
		return nil, fmt.Errorf("read cache template: %w", err)
	}
	if !ok {
		return nil, nil
	}
	sub := &Submission{}
	if err := json.Unmarshal(val, sub); err != nil {
		return nil, nil // a damaged template only loses the fingerprint
	}
	return sub, nil
}

// fromHit builds a hit's submission: what the workload is comes from the
// template, what this submission asked for from the hit.
func fromHit(h *submitcache.Hit, tmpl *Submission) *Submission {
	sub := &Submission{}
	if tmpl != nil {
		*sub = *tmpl
	}
	sub.UID, sub.User, sub.Name, sub.WorkDir, sub.Partition = h.UID, h.User, h.Name, h.WorkDir, h.Partition
	sub.TimeLimit = ParseTimeLimit(h.TimeLimit)
	sub.Gres, sub.Nodes, sub.Argv = h.Gres, h.Nodes, h.Argv
	sub.Script = ScriptPath(h.Argv, h.WorkDir)
	sub.Time = h.Time
	sub.CacheKey, sub.FromCache, sub.MatchedJob = h.Key, true, ""
	return sub
}

// ParseTimeLimit reads job_submit.lua's time_limit (minutes); Slurm's
// NO_VAL and INFINITE, and anything unreadable, mean no limit.
func ParseTimeLimit(s string) time.Duration {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil || n == 0 || n >= 0xfffffffe {
		return 0
	}
	return time.Duration(n) * time.Minute
}

// RefreshTemplate keeps a newer estimate with a cache key's template, so
// that later hits are recorded with the estimate they were given.
func RefreshTemplate(st *store.Store, key string, est *store.EstimateRecord) error {
	tmpl, err := template(st, key)
	if err != nil || tmpl == nil {
		return err
	}
	tmpl.Estimate = est
	val, err := json.Marshal(tmpl)
	if err != nil {
		return fmt.Errorf("refresh cache template: encode: %w", err)
	}
	if err := st.PutKV(templatesBucket, key, val); err != nil {
		return fmt.Errorf("refresh cache template: %w", err)
	}
	return nil
}
