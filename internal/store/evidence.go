package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// AddEvidence records one observation about a node. Entries are keyed by
// node, time and a sequence number, so equal times never collide.
func (s *Store) AddEvidence(e Evidence) error {
	if e.Node == "" || strings.ContainsRune(e.Node, 0) {
		return fmt.Errorf("add evidence: invalid node name %q", e.Node)
	}
	if e.Source == "" {
		return errors.New("add evidence: empty source")
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	val, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode evidence for %s: %w", e.Node, err)
	}
	err = s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketEvidence)
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		key := binary.BigEndian.AppendUint64(evidencePrefix(e.Node, e.Time), seq)
		return b.Put(key, val)
	})
	if err != nil {
		return fmt.Errorf("add evidence for %s: %w", e.Node, err)
	}
	return nil
}

// NodeEvidence returns node's observations at or after since, oldest first.
func (s *Store) NodeEvidence(node string, since time.Time) ([]Evidence, error) {
	var out []Evidence
	prefix := []byte(node + "\x00")
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvidence)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(evidencePrefix(node, since)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var e Evidence
			if err := json.Unmarshal(v, &e); err != nil {
				s.log.Warn("skipped undecodable evidence entry", "node", node)
				continue
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read evidence for %s: %w", node, err)
	}
	return out, nil
}

// evidencePrefix is node, a zero byte and t as big-endian nanoseconds since
// the epoch (times before it sort first).
func evidencePrefix(node string, t time.Time) []byte {
	ns := t.UnixNano()
	if t.Before(time.Unix(0, 0)) {
		ns = 0
	}
	key := append([]byte(node), 0)
	return binary.BigEndian.AppendUint64(key, uint64(ns))
}
