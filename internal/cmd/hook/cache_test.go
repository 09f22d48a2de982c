package hook

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/internal/submitcache"
)

// TestSubmitCacheRoundTrip: a slow-path submission stores its answer under
// job_submit.lua's key; a hit logged by Lua is recorded with the first
// submission's fingerprint; the epilog refreshes the answer.
func TestSubmitCacheRoundTrip(t *testing.T) {
	h := newHarness(t)
	cache := filepath.Join(filepath.Dir(h.dbPath), submitcache.FileName)
	key := "1000 2000 12345 /home/alice/exp train"
	args := append(append([]string{}, submitArgs...), "--cache-key", key, "--cache-file", cache)
	out, _ := h.run(Steps{Estimator: fixedEstimator}, nil, args...)
	entries, err := submitcache.Read(cache, time.Now())
	if err != nil || len(entries) != 1 || entries[0].Key != key || strings.Join(entries[0].Answers, "\n")+"\n" != out {
		t.Fatalf("cache after submit = %+v, %v; want the answer %q", entries, err, out)
	}

	// job_submit.lua answers a resubmission itself and logs the hit.
	hit := "v1\t" + epoch(time.Now()) + "\t1\t" + key + "\t1000\talice\ttrain\t/home/alice/exp\tgpu\t60\tgpu:4\t2\ttrain.sbatch\n"
	if err := os.WriteFile(submitcache.HitsPath(cache), []byte(hit), 0o644); err != nil {
		t.Fatal(err)
	}
	reestimate := func(_ context.Context, j *store.Job) (*Estimate, error) {
		return &Estimate{Record: &store.EstimateRecord{EstimateS: 60, Source: "resubmission"}, Comment: "schedmate: est=1m"}, nil
	}
	vars := append(slices.Clone(epilogVars), "SLURM_JOB_START_TIME="+epoch(time.Now().Add(3*time.Second)))
	_, errOut := h.run(Steps{Reestimate: reestimate}, vars, "epilog")
	if errOut != "" {
		t.Errorf("epilog stderr = %q", errOut)
	}
	if j := h.job("4242"); j.FingerprintHash != "fp1" || j.Script != "/home/alice/exp/train.sbatch" {
		t.Errorf("job recorded from the hit as fingerprint %q, script %q", j.FingerprintHash, j.Script)
	}
	if _, err := os.Stat(submitcache.HitsPath(cache)); !os.IsNotExist(err) {
		t.Errorf("hit log not drained: %v", err)
	}
	entries, _ = submitcache.Read(cache, time.Now())
	if len(entries) != 1 || !slices.Equal(entries[0].Answers, []string{"admin_comment=schedmate: est=1m"}) {
		t.Errorf("cache after epilog = %+v, want the refreshed answer", entries)
	}
}
