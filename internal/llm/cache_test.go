package llm_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/store"
)

func TestCaches(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	caches := map[string]llm.Cache{"memory": llm.NewMemoryCache(), "store": llm.KVCache{KV: st}}
	for name, c := range caches {
		t.Run(name, func(t *testing.T) {
			key, err := llm.HashKey("chat", "model", []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok, err := c.Get(key); ok || err != nil {
				t.Fatalf("empty cache: ok=%v err=%v", ok, err)
			}
			if err := c.Put(key, []byte("answer")); err != nil {
				t.Fatal(err)
			}
			v, ok, err := c.Get(key)
			if !ok || err != nil || string(v) != "answer" {
				t.Errorf("Get = %q, %v, %v", v, ok, err)
			}
		})
	}
}

func TestHashKey(t *testing.T) {
	a, _ := llm.HashKey("k", "x", 1)
	b, _ := llm.HashKey("k", "x", 1)
	c, _ := llm.HashKey("k", "x1")
	if a != b || a == c {
		t.Errorf("keys %s %s %s", a, b, c)
	}
	if _, err := llm.HashKey("k", func() {}); err == nil {
		t.Error("unencodable part accepted")
	}
}
