package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
)

// Cache stores answers by a content hash of what was asked, so an identical
// question (same model, messages, tools, schema and sampling) costs nothing.
type Cache interface {
	// Get returns the value stored under key and whether there was one.
	Get(key string) ([]byte, bool, error)
	// Put stores val under key.
	Put(key string, val []byte) error
}

// KV is the part of schedmate's store that a Cache can live in.
type KV interface {
	PutKV(bucket, key string, val []byte) error
	GetKV(bucket, key string) ([]byte, bool, error)
}

// CacheBucket is the store bucket that KVCache writes to.
const CacheBucket = "llm_cache"

// KVCache is a Cache kept in schedmate's store.
type KVCache struct {
	// KV is the backing store.
	KV KV
	// Bucket overrides CacheBucket when not empty.
	Bucket string
}

func (c KVCache) bucket() string {
	if c.Bucket != "" {
		return c.Bucket
	}
	return CacheBucket
}

// Get implements Cache.
func (c KVCache) Get(key string) ([]byte, bool, error) {
	v, ok, err := c.KV.GetKV(c.bucket(), key)
	if err != nil {
		return nil, false, fmt.Errorf("llm cache get %s: %w", key, err)
	}
	return v, ok, nil
}

// Put implements Cache.
func (c KVCache) Put(key string, val []byte) error {
	if err := c.KV.PutKV(c.bucket(), key, val); err != nil {
		return fmt.Errorf("llm cache put %s: %w", key, err)
	}
	return nil
}

// MemoryCache is a Cache in process memory, safe for concurrent use.
type MemoryCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

// NewMemoryCache returns an empty MemoryCache.
func NewMemoryCache() *MemoryCache { return &MemoryCache{m: map[string][]byte{}} }

// Get implements Cache.
func (c *MemoryCache) Get(key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok, nil
}

// Put implements Cache.
func (c *MemoryCache) Put(key string, val []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = append([]byte(nil), val...)
	return nil
}

// HashKey returns a hex SHA-256 of the JSON encoding of parts, prefixed by
// kind. Callers use it for cache keys of their own results.
func HashKey(kind string, parts ...any) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, p := range parts {
		if err := enc.Encode(p); err != nil {
			return "", fmt.Errorf("hash %s key: %w", kind, err)
		}
	}
	return kind + ":" + hex.EncodeToString(h.Sum(nil)), nil
}
