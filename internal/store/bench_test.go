package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

func benchJob(i int) *Job {
	return &Job{
		JobID: fmt.Sprint(1000000 + i), User: "alice", Account: "ml", Partition: "gpu", Name: "train",
		WorkDir: "/home/alice/runs/exp", Command: "torchrun --nproc_per_node 8 train.py --config cfg.yaml",
		FingerprintHash: "0123456789abcdef", Vector: make([]float32, 64),
		Submit: time.Unix(1700000000, 0), Start: time.Unix(1700000100, 0), End: time.Unix(1700003700, 0),
		TimeLimit: 4 * time.Hour, State: "COMPLETED", NodeList: "gpu[01-02]", Nodes: []string{"gpu01", "gpu02"},
		NumNodes: 2, NumGPUs: 16, Source: "epilog",
	}
}

func BenchmarkPutJob(b *testing.B) {
	st, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := st.PutJob(benchJob(i)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkForEachJob100k(b *testing.B) {
	st, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const n = 100_000
	st.db.NoSync = true // setup only: skip 100k fsyncs
	for i := range n {
		if err := st.PutJob(benchJob(i)); err != nil {
			b.Fatal(err)
		}
	}
	st.db.NoSync = false
	b.ResetTimer()
	for b.Loop() {
		count := 0
		if err := st.ForEachJob(func(*Job) error { count++; return nil }); err != nil {
			b.Fatal(err)
		}
		if count != n {
			b.Fatalf("visited %d jobs", count)
		}
	}
}
