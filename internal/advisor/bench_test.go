package advisor

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/store"
)

// benchDir holds the synthetic history databases, built once per size.
var (
	benchDir string
	benchDBs = map[int]string{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// syntheticJob is job i of a history with 2,000 users (skewed), 30 programs
// per user and log-normal durations per program.
func syntheticJob(rng *rand.Rand, i int) (JobInfo, float64) {
	user := int(math.Min(1999, rng.ExpFloat64()*300))
	prog := rng.IntN(30)
	j := JobInfo{
		ID:         fmt.Sprint(i),
		User:       fmt.Sprintf("user%04d", user),
		Name:       fmt.Sprintf("prog%02d_run%d", prog, rng.IntN(100)),
		Partition:  []string{"gpu", "cpu", "debug"}[prog%3],
		WorkDir:    fmt.Sprintf("/home/user%04d/proj%02d", user, prog),
		Command:    fmt.Sprintf("torchrun train.py --config cfg%02d.yaml", prog),
		TimeLimitS: float64(3600 * (1 + prog%8)),
		GPUs:       1 << (prog % 4),
		Metadata:   map[string]string{"model": fmt.Sprintf("model%d", prog%7), "dataset": fmt.Sprintf("data%d", prog%5)},
	}
	base := 300 * math.Exp(float64(prog%10)/2)
	return j, base * math.Exp(rng.NormFloat64()*0.3)
}

// benchStore returns a database holding n synthetic ended jobs.
func benchStore(b *testing.B, n int) string {
	b.Helper()
	if p, ok := benchDBs[n]; ok {
		return p
	}
	if benchDir == "" {
		d, err := os.MkdirTemp("", "advisor-bench")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
	}
	path := filepath.Join(benchDir, fmt.Sprintf("h%d.db", n))
	st, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	const batch = 2000
	for start := 0; start < n; start += batch {
		var recs []Record
		var keys []uint64
		for i := start; i < min(n, start+batch); i++ {
			j, d := syntheticJob(rng, i)
			recs = append(recs, NewRecord(&j, int64(1_600_000_000+i*30), d, StateCompleted, math.NaN(), math.NaN(), math.NaN()))
			keys = append(keys, ResubmitKey(&j))
		}
		if err := Put(st, recs, keys); err != nil {
			b.Fatal(err)
		}
	}
	benchDBs[n] = path
	return path
}

// BenchmarkRetrieval measures one estimate from a database of 10k, 100k and
// 1M ended jobs (database already open).
func BenchmarkRetrieval(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			if n >= 1_000_000 && testing.Short() {
				b.Skip("1M-job database skipped in -short mode")
			}
			st, err := store.Open(benchStore(b, n), store.Options{Timeout: time.Second, ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			rng := rand.New(rand.NewPCG(7, 7))
			queries := make([]JobInfo, 256)
			for i := range queries {
				queries[i], _ = syntheticJob(rng, i)
				queries[i].Command += " --new" // not a resubmission: full retrieval
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := Advise(st, &queries[i%len(queries)], DefaultOptions()); err != nil {
					b.Fatal(err)
				}
			}
			reportIndexSize(b, st, n)
		})
	}
}

// BenchmarkSubmitPath measures what `hook submit` does per job, less process
// start: open the database read-only, fingerprint the script, estimate,
// close; over 100k ended jobs.
func BenchmarkSubmitPath(b *testing.B) {
	path := benchStore(b, 100_000)
	dir := copyProject(b)
	req := SubmitRequest{Job: JobInfo{User: "user0001", WorkDir: dir}, Script: filepath.Join(dir, "train.sbatch")}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		st, err := store.Open(path, store.Options{Timeout: time.Second, ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ForSubmit(context.Background(), st, req, Policy{SetTimeMin: true}, DefaultOptions()); err != nil {
			b.Fatal(err)
		}
		st.Close()
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}

// reportPercentiles adds p50 and p99 latency to a benchmark's report.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(s[len(s)*99/100].Microseconds())/1000, "p99-ms")
}

// reportIndexSize adds the index's size per job to a benchmark's report:
// the pages its bucket holds (index-B/job) and the bytes in use on them
// (live-B/job).
func reportIndexSize(b *testing.B, st *store.Store, n int) {
	size, err := st.SizeKV(IndexBucket)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(size.AllocBytes)/float64(n), "index-B/job")
	b.ReportMetric(float64(size.InuseBytes)/float64(n), "live-B/job")
	if fi, err := os.Stat(st.Path()); err == nil {
		b.ReportMetric(float64(fi.Size())/float64(n), "file-B/job")
	}
}
