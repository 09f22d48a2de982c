package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Audit appends e to the audit trail and returns its sequence number. Write
// it before acting; record the outcome with FinishAudit.
func (s *Store) Audit(e AuditEntry) (uint64, error) {
	if e.Action == "" {
		return 0, errors.New("audit: empty action")
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	err := s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketAudit)
		if err != nil {
			return err
		}
		if e.Seq, err = b.NextSequence(); err != nil {
			return err
		}
		val, err := json.Marshal(e)
		if err != nil {
			return err
		}
		return b.Put(seqKey(e.Seq), val)
	})
	if err != nil {
		return 0, fmt.Errorf("audit %s %s: %w", e.Action, e.Target, err)
	}
	return e.Seq, nil
}

// FinishAudit records the outcome of the action logged as seq: result, and
// actErr's text when the action failed.
func (s *Store) FinishAudit(seq uint64, result string, actErr error) error {
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		if b == nil {
			return ErrNotFound
		}
		v := b.Get(seqKey(seq))
		if v == nil {
			return ErrNotFound
		}
		var e AuditEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("%w: decode entry: %w", ErrCorrupt, err)
		}
		e.Result = result
		if actErr != nil {
			e.Err = actErr.Error()
		}
		val, err := json.Marshal(e)
		if err != nil {
			return err
		}
		return b.Put(seqKey(seq), val)
	})
	if err != nil {
		return fmt.Errorf("finish audit %d: %w", seq, err)
	}
	return nil
}

// AuditEntries returns entries at or after since, oldest first; with limit
// > 0 only the newest limit of them.
func (s *Store) AuditEntries(since time.Time, limit int) ([]AuditEntry, error) {
	var out []AuditEntry
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if limit > 0 && len(out) == limit {
				break
			}
			var e AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				s.log.Warn("skipped undecodable audit entry", "seq", binary.BigEndian.Uint64(k))
				continue
			}
			if e.Time.Before(since) {
				continue
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
