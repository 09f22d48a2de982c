package advisor

import (
	"slices"
	"sort"
	"strings"

	"github.com/schedmate/schedmate/internal/store"
)

// memKV is an in-memory KV for tests.
type memKV struct {
	buckets map[string]map[string][]byte
}

func newMemKV() *memKV { return &memKV{buckets: map[string]map[string][]byte{}} }

func (m *memKV) GetKV(bucket, key string) ([]byte, bool, error) {
	v, ok := m.buckets[bucket][key]
	return v, ok, nil
}

// keys returns the keys of bucket under prefix, in order.
func (m *memKV) keys(bucket, prefix string) []string {
	var keys []string
	for k := range m.buckets[bucket] {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func (m *memKV) ScanKVReverse(bucket, prefix string, fn func(k string, v []byte) error) error {
	keys := m.keys(bucket, prefix)
	slices.Reverse(keys)
	for _, k := range keys {
		if err := fn(k, m.buckets[bucket][k]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memKV) BatchKV(bucket string, fn func(put func(k string, v []byte) error) error) error {
	return m.AppendKV(bucket, func(w store.KVWriter) error { return fn(w.Put) })
}

func (m *memKV) AppendKV(bucket string, fn func(w store.KVWriter) error) error {
	if m.buckets[bucket] == nil {
		m.buckets[bucket] = map[string][]byte{}
	}
	return fn(memWriter{m, bucket})
}

// memWriter writes to one bucket of a memKV.
type memWriter struct {
	m      *memKV
	bucket string
}

func (w memWriter) Put(k string, v []byte) error {
	w.m.buckets[w.bucket][k] = append([]byte(nil), v...)
	return nil
}

func (w memWriter) Trim(prefix string, keep int) (int, error) {
	keys := w.m.keys(w.bucket, prefix)
	n := max(len(keys)-keep, 0)
	for _, k := range keys[:n] {
		delete(w.m.buckets[w.bucket], k)
	}
	return n, nil
}
