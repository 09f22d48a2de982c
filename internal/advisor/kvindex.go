package advisor

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/schedmate/schedmate/internal/store"
)

// KV is the part of the store's generic key-value API the advisor uses.
// *store.Store implements it.
type KV interface {
	GetKV(bucket, key string) ([]byte, bool, error)
	ScanKVReverse(bucket, prefix string, fn func(k string, v []byte) error) error
	BatchKV(bucket string, fn func(put func(k string, v []byte) error) error) error
	AppendKV(bucket string, fn func(w store.KVWriter) error) error
}

// IndexBucket holds the retrieval index: every ended job under the blocks it
// belongs to, oldest first within a block (so that writes append), in the
// binary record encoding. A block keeps only the newest entries a search
// reads; older ones are trimmed as new ones arrive.
const IndexBucket = "advisor_blocks"

// Block kinds, the first byte of index keys.
const (
	blockLogical   = 'L'
	blockUser      = 'U'
	blockPartition = 'P'
	blockGlobal    = 'G'
	blockResubmit  = 'R'
	globalPrefix   = string(blockGlobal)
)

// blockPrefix is the key prefix of one block: its kind and 8-byte key.
func blockPrefix(kind byte, key uint64) string {
	return string(binary.BigEndian.AppendUint64([]byte{kind}, key))
}

// entryKey orders a block's entries oldest first: the end time, big-endian
// with the sign bit flipped, then the job ID to keep keys unique.
func entryKey(prefix string, r *Record) string {
	b := make([]byte, 0, len(prefix)+8+len(r.JobID))
	b = append(b, prefix...)
	b = binary.BigEndian.AppendUint64(b, uint64(r.End)^(1<<63))
	return string(append(b, r.JobID...))
}

// blockEntry is one index entry to write.
type blockEntry struct {
	prefix string
	val    []byte
	keep   int
}

// Put adds ended jobs to the index in one transaction and trims every block
// it touched to what a search reads. resubmitKeys, when not nil, gives each
// record's resubmission key (see ResubmitKey); 0 skips it.
func Put(kv KV, recs []Record, resubmitKeys []uint64) error {
	err := kv.AppendKV(IndexBucket, func(w store.KVWriter) error {
		touched := make(map[string]int)
		for i := range recs {
			r := &recs[i]
			short := encodeRecord(r, false)
			entries := []blockEntry{
				{blockPrefix(blockLogical, r.LogicalKey), encodeRecord(r, true), logicalCap},
				{blockPrefix(blockUser, r.UserKey), encodeRecord(r, true), userCap},
				{blockPrefix(blockPartition, r.PartKey), short, partitionCap},
				{globalPrefix, short, globalCap},
			}
			if resubmitKeys != nil && resubmitKeys[i] != 0 {
				entries = append(entries, blockEntry{blockPrefix(blockResubmit, resubmitKeys[i]), short, resubmitCap})
			}
			for _, e := range entries {
				if err := w.Put(entryKey(e.prefix, r), e.val); err != nil {
					return err
				}
				touched[e.prefix] = e.keep
			}
		}
		for prefix, keep := range touched {
			if _, err := w.Trim(prefix, keep); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("index %d jobs: %w", len(recs), err)
	}
	return nil
}

// errEnough stops a scan once a block has given what is needed.
var errEnough = errors.New("enough")

// scanBlock reads up to limit of a block's newest records, newest first.
// Undecodable entries are skipped: one bad entry must not hide the rest.
func scanBlock(kv KV, prefix string, limit int, fn func(Record)) error {
	n := 0
	err := kv.ScanKVReverse(IndexBucket, prefix, func(_ string, v []byte) error {
		r, _, err := decodeRecord(v)
		if err != nil {
			return nil
		}
		fn(r)
		n++
		if n >= limit {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return fmt.Errorf("read index block %q: %w", prefix, err)
	}
	return nil
}

// Load reads the blocks a query needs from the store into an in-memory
// index: the newest records of the job's logical-name block, its user, its
// partition and the cluster.
func Load(kv KV, q Query) (*Index, error) {
	ix := NewIndex()
	for _, b := range []struct {
		prefix string
		limit  int
		add    func(Record)
	}{
		{globalPrefix, globalCap, ix.global.add},
		{blockPrefix(blockPartition, q.Keys.Partition), partitionCap, ix.ringAdder(ix.partition, q.Keys.Partition, partitionCap)},
		{blockPrefix(blockUser, q.Keys.User), userCap, ix.ringAdder(ix.user, q.Keys.User, userCap)},
		{blockPrefix(blockLogical, q.Keys.Logical), logicalCap, ix.ringAdder(ix.logical, q.Keys.Logical, logicalCap)},
	} {
		var recs []Record
		if err := scanBlock(kv, b.prefix, b.limit, func(r Record) { recs = append(recs, r) }); err != nil {
			return nil, err
		}
		for i := len(recs) - 1; i >= 0; i-- { // rings take oldest first
			b.add(recs[i])
		}
	}
	return ix, nil
}

// ringAdder returns a function adding records to one block of the index.
func (ix *Index) ringAdder(m map[uint64]*ring, key uint64, capacity int) func(Record) {
	return func(r Record) {
		rg := m[key]
		if rg == nil {
			rg = newRing(capacity)
			m[key] = rg
		}
		rg.add(r)
	}
}

// resubmissions reads the newest records filed under a resubmission key.
func resubmissions(kv KV, key uint64, limit int) ([]Record, error) {
	var recs []Record
	err := scanBlock(kv, blockPrefix(blockResubmit, key), limit, func(r Record) { recs = append(recs, r) })
	return recs, err
}

// NoHistory is a KV with no entries that discards writes, for estimates
// when no database exists yet.
var NoHistory KV = emptyKV{}

type emptyKV struct{}

// GetKV implements KV.
func (emptyKV) GetKV(string, string) ([]byte, bool, error) { return nil, false, nil }

// ScanKVReverse implements KV.
func (emptyKV) ScanKVReverse(string, string, func(string, []byte) error) error { return nil }

// BatchKV implements KV.
func (emptyKV) BatchKV(string, func(func(string, []byte) error) error) error {
	return nil
}

// AppendKV implements KV.
func (emptyKV) AppendKV(string, func(store.KVWriter) error) error { return nil }
