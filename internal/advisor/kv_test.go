package advisor

import (
	"sort"
	"strings"
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

func (m *memKV) ScanKV(bucket, prefix string, fn func(k string, v []byte) error) error {
	var keys []string
	for k := range m.buckets[bucket] {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := fn(k, m.buckets[bucket][k]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memKV) BatchKV(bucket string, fn func(put func(k string, v []byte) error) error) error {
	b := m.buckets[bucket]
	if b == nil {
		b = map[string][]byte{}
		m.buckets[bucket] = b
	}
	return fn(func(k string, v []byte) error {
		b[k] = append([]byte(nil), v...)
		return nil
	})
}
