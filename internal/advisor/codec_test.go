package advisor

import (
	"math"
	"testing"
)

func TestCodecRoundTrip(t *testing.T) {
	j := JobInfo{ID: "4242_7", User: "alice", Name: "train", Partition: "gpu"}
	in := NewRecord(&j, 1700000000, 3600.5, StateCancelled, 75, 30.5, math.NaN())
	for _, withVec := range []bool{true, false} {
		out, hasVec, err := decodeRecord(encodeRecord(&in, withVec))
		if err != nil {
			t.Fatal(err)
		}
		if hasVec != withVec {
			t.Errorf("hasVec = %v", hasVec)
		}
		if out.JobID != in.JobID || out.End != in.End || out.DurationS != in.DurationS || out.State != in.State ||
			out.GPUUtil != in.GPUUtil || !math.IsNaN(float64(out.StepTimeS)) {
			t.Errorf("round trip: got %+v, want %+v", out, in)
		}
		if withVec && (out.Vec != in.Vec || out.LogicalKey != in.LogicalKey) {
			t.Error("vector or logical key changed")
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	j := JobInfo{ID: "1", User: "u", Name: "n"}
	r := NewRecord(&j, 1, 2, StateCompleted, 1, 2, 3)
	f.Add(encodeRecord(&r, true))
	f.Add(encodeRecord(&r, false))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, hasVec, err := decodeRecord(b)
		if err != nil {
			return
		}
		again, _, err := decodeRecord(encodeRecord(&rec, hasVec))
		if err != nil || again.JobID != rec.JobID {
			t.Fatalf("re-encode failed: %v", err)
		}
	})
}
