package store

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The generic key-value API lets packages that keep their own encodings (a
// vector index, a metadata cache) share the database. Each name maps to its
// own bucket, "kv:<name>".

func kvBucket(name string) ([]byte, error) {
	if name == "" {
		return nil, errors.New("empty bucket name")
	}
	return []byte(kvPrefix + name), nil
}

// PutKV stores val under key in bucket.
func (s *Store) PutKV(bucket, key string, val []byte) error {
	return s.BatchKV(bucket, func(put func(k string, v []byte) error) error {
		return put(key, val)
	})
}

// GetKV returns a copy of the value under key in bucket; ok is false when
// there is none.
func (s *Store) GetKV(bucket, key string) (val []byte, ok bool, err error) {
	name, err := kvBucket(bucket)
	if err != nil {
		return nil, false, fmt.Errorf("get %s/%s: %w", bucket, key, err)
	}
	err = s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(name); b != nil {
			if v := b.Get([]byte(key)); v != nil {
				val, ok = bytes.Clone(v), true
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("get %s/%s: %w", bucket, key, err)
	}
	return val, ok, nil
}

// ScanKV calls fn, in key order, for each entry of bucket whose key starts
// with prefix. v is a copy that fn may keep. fn runs inside a read
// transaction and must not write to the store; an error from fn stops the
// scan and is returned.
func (s *Store) ScanKV(bucket, prefix string, fn func(k string, v []byte) error) error {
	return s.scanKV(bucket, prefix, false, fn)
}

// ScanKVReverse is ScanKV in reverse key order: the highest key first.
func (s *Store) ScanKVReverse(bucket, prefix string, fn func(k string, v []byte) error) error {
	return s.scanKV(bucket, prefix, true, fn)
}

func (s *Store) scanKV(bucket, prefix string, reverse bool, fn func(k string, v []byte) error) error {
	name, err := kvBucket(bucket)
	if err != nil {
		return fmt.Errorf("scan %s: %w", bucket, err)
	}
	p := []byte(prefix)
	return s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(name)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		first, next := c.Seek, c.Next
		if reverse {
			first = func(p []byte) ([]byte, []byte) { return seekLast(c, p) }
			next = c.Prev
		}
		for k, v := first(p); k != nil && bytes.HasPrefix(k, p); k, v = next() {
			if err := fn(string(k), bytes.Clone(v)); err != nil {
				return err
			}
		}
		return nil
	})
}

// seekLast moves c to the last key starting with prefix (or to the key
// before where it would be).
func seekLast(c *bolt.Cursor, prefix []byte) ([]byte, []byte) {
	if end := prefixEnd(prefix); end != nil {
		if k, _ := c.Seek(end); k != nil {
			return c.Prev()
		}
	}
	return c.Last()
}

// prefixEnd returns the smallest key above every key starting with prefix,
// or nil when there is none (an empty or all-0xff prefix).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// KVWriter writes to one key-value bucket inside a transaction.
type KVWriter interface {
	// Put stores v under k.
	Put(k string, v []byte) error
	// Trim deletes the lowest-keyed entries under prefix so that at most
	// keep remain, and returns how many it deleted.
	Trim(prefix string, keep int) (int, error)
}

// appendFill is the page fill of buckets written by AppendKV: their keys
// mostly grow, so full pages stay full.
const appendFill = 0.95

// AppendKV writes to bucket in one transaction, for buckets whose keys
// mostly arrive in ascending order (time-ordered logs): pages are filled
// before they split, and Trim bounds what a prefix keeps. An error from fn
// discards every write.
func (s *Store) AppendKV(bucket string, fn func(w KVWriter) error) error {
	name, err := kvBucket(bucket)
	if err != nil {
		return fmt.Errorf("write %s: %w", bucket, err)
	}
	err = s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		b.FillPercent = appendFill
		return fn(boltWriter{b})
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", bucket, err)
	}
	return nil
}

// boltWriter is the KVWriter of one bucket in a write transaction.
type boltWriter struct{ b *bolt.Bucket }

// Put stores v under k.
func (w boltWriter) Put(k string, v []byte) error {
	if k == "" {
		return errors.New("empty key")
	}
	return w.b.Put([]byte(k), v)
}

// Trim deletes the oldest entries under prefix beyond the newest keep, and reports how many it deleted.
func (w boltWriter) Trim(prefix string, keep int) (int, error) {
	p := []byte(prefix)
	c := w.b.Cursor()
	// Count forward: a bbolt cursor stepping backwards misreads pages
	// emptied by earlier deletes in the same transaction.
	n := 0
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
		n++
	}
	deleted := 0
	// Seek again after each delete: a bbolt cursor skips an entry when
	// stepped after Delete.
	for ; deleted < n-keep; deleted++ {
		if k, _ := c.Seek(p); k == nil || !bytes.HasPrefix(k, p) {
			break
		}
		if err := c.Delete(); err != nil {
			return deleted, fmt.Errorf("trim %q: %w", prefix, err)
		}
	}
	return deleted, nil
}

// BatchKV writes many entries to bucket in one transaction: fn calls put for
// each; an error from fn or put discards them all.
func (s *Store) BatchKV(bucket string, fn func(put func(k string, v []byte) error) error) error {
	name, err := kvBucket(bucket)
	if err != nil {
		return fmt.Errorf("write %s: %w", bucket, err)
	}
	err = s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		return fn(func(k string, v []byte) error {
			if k == "" {
				return errors.New("empty key")
			}
			return b.Put([]byte(k), v)
		})
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", bucket, err)
	}
	return nil
}

// DeleteKV removes key from bucket; removing an absent key is not an error.
func (s *Store) DeleteKV(bucket, key string) error {
	name, err := kvBucket(bucket)
	if err != nil {
		return fmt.Errorf("delete %s/%s: %w", bucket, key, err)
	}
	err = s.update(func(tx *bolt.Tx) error {
		if b := tx.Bucket(name); b != nil {
			return b.Delete([]byte(key))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete %s/%s: %w", bucket, key, err)
	}
	return nil
}

// KVSize is the space one key-value bucket takes in the database file.
type KVSize struct {
	Keys       int // entries
	AllocBytes int // pages the bucket holds
	InuseBytes int // bytes in use on those pages
}

// SizeKV reports how much space bucket takes; an absent bucket takes none.
func (s *Store) SizeKV(bucket string) (KVSize, error) {
	name, err := kvBucket(bucket)
	if err != nil {
		return KVSize{}, fmt.Errorf("size of %s: %w", bucket, err)
	}
	var size KVSize
	err = s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(name); b != nil {
			st := b.Stats()
			size = KVSize{Keys: st.KeyN, AllocBytes: st.BranchAlloc + st.LeafAlloc, InuseBytes: st.BranchInuse + st.LeafInuse}
		}
		return nil
	})
	if err != nil {
		return KVSize{}, fmt.Errorf("size of %s: %w", bucket, err)
	}
	return size, nil
}
