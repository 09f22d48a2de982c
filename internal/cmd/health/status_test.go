package health

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
)

func TestCollectStatus(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	for _, e := range []store.Evidence{
		{Node: "n2", Time: now.Add(-2 * time.Hour), Source: "nvml", OK: true, Trusted: true},
		{Node: "n2", Time: now.Add(-time.Hour), Source: "nvml", OK: false, Trusted: true, Summary: "GPU 1 ecc"},
		{Node: "n1", Time: now.Add(-30 * 24 * time.Hour), Source: "nccl", OK: true, Trusted: true},
	} {
		if err := st.AddEvidence(e); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := collectStatus([]slurm.Node{
		{Name: "n2", State: "IDLE+DRAIN", Reason: slurm.Reason("nvml", "GPU 1 ecc")},
		{Name: "n1", State: "DRAINED", Reason: "maintenance"},
	}, st, now.Add(-7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Node != "n1" || rows[0].DrainedBySchedmate || len(rows[0].Last) != 0 {
		t.Fatalf("n1 row %+v", rows[0])
	}
	if !rows[1].DrainedBySchedmate || rows[1].Last["nvml"].OK || rows[1].Last["nvml"].Summary != "GPU 1 ecc" {
		t.Fatalf("n2 row %+v", rows[1])
	}
}
