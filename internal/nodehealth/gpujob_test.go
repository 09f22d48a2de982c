package nodehealth

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/gpu"
	"github.com/schedmate/schedmate/internal/spool"
)

func TestIngestSpool(t *testing.T) {
	st := openStore(t)
	sp := spool.New(filepath.Join(t.TempDir(), "gpu.spool"))
	end := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	recs := []JobGPURecord{
		{JobID: "42", Node: "n01", Figures: gpu.Figures{Samples: 10, MeanSMUtil: 90, PeakMemBytes: 70 << 30, GPUs: []string{"a", "b"}, End: end}},
		{JobID: "42", Node: "n02", Figures: gpu.Figures{Samples: 10, MeanSMUtil: 30, PeakMemBytes: 75 << 30, GPUs: []string{"c", "d"}, Xids: []int{13, 79}, End: end}},
	}
	for _, r := range recs {
		if err := WriteJobGPU(sp, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Write("unrelated", map[string]int{"x": 1}); err != nil {
		t.Fatal(err)
	}
	res, err := IngestSpool(sp, st)
	if err != nil || res.Applied != 2 || res.SetAside != 1 {
		t.Fatalf("ingest %+v %v", res, err)
	}
	// Applying a record again (after a crash between apply and delete)
	// changes nothing.
	if err := applyJobGPU(st, recs[1]); err != nil {
		t.Fatal(err)
	}
	j, err := st.GetJob("42")
	if err != nil {
		t.Fatal(err)
	}
	if j.GPU == nil || j.GPU.MeanSMUtil != 60 || j.GPU.PeakMemBytes != 75<<30 || !reflect.DeepEqual(j.GPU.Xids, []int{13, 79}) {
		t.Fatalf("job GPU %+v", j.GPU)
	}
	ev, err := st.NodeEvidence("n02", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// Xid 13 is the job's own fault; only Xid 79 is evidence against the node.
	var xids []string
	for _, e := range ev {
		if !e.Trusted || e.OK || e.JobID != "42" {
			t.Errorf("evidence %+v", e)
		}
		xids = append(xids, e.Check)
	}
	if !reflect.DeepEqual(xids, []string{"xid-79"}) {
		t.Errorf("evidence checks %v", xids)
	}
	if err := WriteJobGPU(sp, JobGPURecord{Node: "n01"}); err == nil {
		t.Error("record without job id accepted")
	}
}
