package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sparseLog writes a log of the given size whose content is a repeated block
// of progress lines at its end and a hole (zero bytes, no disk use) before it,
// so multi-gigabyte logs cost nothing to create.
func sparseLog(b *testing.B, size int64) string {
	b.Helper()
	var block strings.Builder
	for i := 0; block.Len() < 1<<20; i++ {
		fmt.Fprintf(&block, "[2024-05-01 10:00:%02d,%03d] iter %d/100000: loss 2.3000, time 45.20ms, mfu 12.00%%\n", i%60, i%1000, i)
		fmt.Fprintf(&block, "[rank3]: some other output line with numbers 12 34 and no progress\n")
	}
	path := filepath.Join(b.TempDir(), "job.out")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tail := block.String()
	if int64(len(tail)) > size {
		tail = tail[int64(len(tail))-size:]
	}
	if err := f.Truncate(size - int64(len(tail))); err != nil {
		b.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(tail), size-int64(len(tail))); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkExtractFile shows that the cost does not grow with the log size.
func BenchmarkExtractFile(b *testing.B) {
	for _, size := range []int64{1 << 20, 100 << 20, 1 << 30} {
		b.Run(fmt.Sprintf("%dMB", size>>20), func(b *testing.B) {
			path := sparseLog(b, size)
			var read int64
			b.ResetTimer()
			for b.Loop() {
				rep, err := ExtractFile(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if rep.StepTimeS == nil {
					b.Fatal("no step time")
				}
				read = rep.BytesRead
			}
			b.ReportMetric(float64(read), "bytes-read/op")
		})
	}
}

// BenchmarkExtractNoProgress is the worst case: nothing to find, so the scan
// runs to its byte bound.
func BenchmarkExtractNoProgress(b *testing.B) {
	log := strings.Repeat("loading shard from /data/x with 1234 entries ok\n", 200000)
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		if _, err := Extract(strings.NewReader(log), int64(len(log)), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
