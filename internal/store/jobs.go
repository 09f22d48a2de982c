package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// forEachBatch is how many jobs ForEachJob decodes per read transaction, so
// that a slow callback never holds a transaction open.
const forEachBatch = 512

// PutJob stores j under its JobID, replacing any earlier entry.
func (s *Store) PutJob(j *Job) error {
	if j == nil || j.JobID == "" {
		return errors.New("put job: empty job id")
	}
	val, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode job %s: %w", j.JobID, err)
	}
	err = s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketJobs)
		if err != nil {
			return err
		}
		return b.Put([]byte(j.JobID), val)
	})
	if err != nil {
		return fmt.Errorf("put job %s: %w", j.JobID, err)
	}
	return nil
}

// UpdateJob reads job id, lets fn change it and writes it back, all in one
// transaction. An absent job (or an entry too damaged to decode) starts as
// an empty Job with only JobID set. An error from fn aborts the update.
func (s *Store) UpdateJob(id string, fn func(*Job) error) error {
	if err := s.UpdateJobs([]string{id}, func(j *Job, _ bool) error { return fn(j) }); err != nil {
		return fmt.Errorf("update job %s: %w", id, err)
	}
	return nil
}

// UpdateJobs is UpdateJob for many jobs in one transaction (bulk imports);
// fn also learns whether the job was already stored. An error from fn
// aborts the whole batch.
func (s *Store) UpdateJobs(ids []string, fn func(j *Job, exists bool) error) error {
	return s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketJobs)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if id == "" {
				return errors.New("empty job id")
			}
			j, exists := &Job{JobID: id}, false
			if v := b.Get([]byte(id)); v != nil {
				if err := json.Unmarshal(v, j); err != nil {
					s.log.Warn("replacing undecodable job entry", "job", id, "err", err)
					j = &Job{JobID: id}
				} else {
					exists = true
				}
			}
			if err := fn(j, exists); err != nil {
				return err
			}
			j.JobID = id
			val, err := json.Marshal(j)
			if err != nil {
				return fmt.Errorf("encode job %s: %w", id, err)
			}
			if err := b.Put([]byte(id), val); err != nil {
				return err
			}
		}
		return nil
	})
}

// GetJob returns job id, or an error wrapping ErrNotFound.
func (s *Store) GetJob(id string) (*Job, error) {
	var j *Job
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJobs)
		if b == nil {
			return ErrNotFound
		}
		v := b.Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		j = &Job{}
		if err := json.Unmarshal(v, j); err != nil {
			return fmt.Errorf("%w: decode entry: %w", ErrCorrupt, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	return j, nil
}

// ForEachJob calls fn for every job in key order. Entries that cannot be
// decoded are skipped and counted in one warning. fn may use the store: jobs
// are read in short batches and no transaction is open while fn runs. An
// error from fn stops the walk and is returned.
func (s *Store) ForEachJob(fn func(*Job) error) error {
	var (
		after   []byte
		skipped []string
	)
	for {
		batch := make([]*Job, 0, forEachBatch)
		done := true
		err := s.view(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketJobs)
			if b == nil {
				return nil
			}
			c := b.Cursor()
			k, v := c.First()
			if after != nil {
				k, v = c.Seek(after)
				if k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for n := 0; k != nil; k, v = c.Next() {
				if n == forEachBatch {
					done = false
					break
				}
				n++
				after = append(after[:0], k...)
				j := &Job{}
				if err := json.Unmarshal(v, j); err != nil {
					skipped = append(skipped, string(k))
					continue
				}
				batch = append(batch, j)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read jobs: %w", err)
		}
		for _, j := range batch {
			if err := fn(j); err != nil {
				return err
			}
		}
		if done {
			break
		}
	}
	if len(skipped) > 0 {
		s.log.Warn("skipped undecodable job entries", "count", len(skipped), "first", skipped[0], "store", s.path)
	}
	return nil
}
