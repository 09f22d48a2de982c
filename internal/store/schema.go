package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Bucket names.
var (
	bucketMeta     = []byte("meta")
	bucketJobs     = []byte("jobs")
	bucketAudit    = []byte("audit")
	bucketEvidence = []byte("evidence")
	keySchema      = []byte("schema_version")
)

// kvPrefix starts the name of every generic key-value bucket.
const kvPrefix = "kv:"

// migrations bring a database from version i to i+1 (index i); they run in
// order inside one transaction, so a database is never left half-migrated.
var migrations = []func(tx *bolt.Tx) error{
	// v1: the jobs, audit and evidence buckets.
	func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketJobs, bucketAudit, bucketEvidence} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return nil
	},
}

// SchemaVersion is the database layout this build writes.
var SchemaVersion = uint64(len(migrations))

// schemaVersion reads the stored layout version; a database without one is v0.
func schemaVersion(tx *bolt.Tx) (uint64, error) {
	b := tx.Bucket(bucketMeta)
	if b == nil {
		return 0, nil
	}
	v := b.Get(keySchema)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: schema version has %d bytes, want 8", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// migrate refuses databases from a newer schedmate and, when writable,
// applies the migrations this one is missing.
func (s *Store) migrate() error {
	var current uint64
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		current, err = schemaVersion(tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("store %s: read schema version: %w", s.path, err)
	}
	if current > SchemaVersion {
		return fmt.Errorf("store %s: %w (file has v%d, this build knows v%d)", s.path, ErrSchemaTooNew, current, SchemaVersion)
	}
	if current == SchemaVersion || s.readOnly {
		return nil
	}
	err = s.update(func(tx *bolt.Tx) error {
		v, err := schemaVersion(tx)
		if err != nil {
			return err
		}
		for ; v < SchemaVersion; v++ {
			if err := migrations[v](tx); err != nil {
				return fmt.Errorf("migrate to v%d: %w", v+1, err)
			}
		}
		return setSchemaVersion(tx, v)
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	return nil
}

func setSchemaVersion(tx *bolt.Tx, v uint64) error {
	b, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return fmt.Errorf("create meta bucket: %w", err)
	}
	return b.Put(keySchema, binary.BigEndian.AppendUint64(nil, v))
}
