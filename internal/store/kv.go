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
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			if err := fn(string(k), bytes.Clone(v)); err != nil {
				return err
			}
		}
		return nil
	})
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
