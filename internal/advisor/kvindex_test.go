package advisor

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/store"
)

// openStore opens a fresh database for a test.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// blockLen counts a block's entries.
func blockLen(t *testing.T, kv KV, prefix string) int {
	t.Helper()
	n := 0
	if err := kv.ScanKVReverse(IndexBucket, prefix, func(string, []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPutTrimsBlocks(t *testing.T) {
	st := openStore(t)
	j := JobInfo{User: "alice", Name: "train", Command: "python train.py", Partition: "gpu"}
	for batch := range 3 {
		var recs []Record
		for i := range 300 {
			n := batch*300 + i
			r := ended(j, int64(n), float64(1000+n), StateCompleted)
			r.JobID = strconv.Itoa(n)
			recs = append(recs, r)
		}
		if err := Put(st, recs, nil); err != nil {
			t.Fatal(err)
		}
	}
	k := KeysOf(&j)
	for _, c := range []struct {
		prefix string
		want   int
	}{
		{blockPrefix(blockLogical, k.Logical), logicalCap},
		{blockPrefix(blockUser, k.User), userCap},
		{blockPrefix(blockPartition, k.Partition), partitionCap},
		{globalPrefix, globalCap},
	} {
		if got := blockLen(t, st, c.prefix); got != c.want {
			t.Errorf("block %q holds %d entries, want %d", c.prefix[:1], got, c.want)
		}
	}
	est, err := Advise(st, &j, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if est.Matches[0].DurationS != 1899 {
		t.Errorf("newest match = %+v, want the last job (1899s)", est.Matches[0])
	}
}

func TestCorruptEntriesSkipped(t *testing.T) {
	st := openStore(t)
	dir := copyProject(t)
	req := SubmitRequest{Job: JobInfo{User: "alice", WorkDir: dir, Name: "train", Partition: "gpu"},
		Script: filepath.Join(dir, "train.sbatch")}
	ctx := context.Background()
	first, err := ForSubmit(ctx, st, req, Policy{}, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	j := withOptions(withFingerprint(req.Job, first.Fingerprint), first.Fingerprint.Options)
	var recs []Record
	for i := range 20 {
		r := ended(j, int64(i), 600, StateCompleted)
		r.JobID = strconv.Itoa(i)
		recs = append(recs, r)
	}
	if err := Put(st, recs, nil); err != nil {
		t.Fatal(err)
	}
	// Damage the newest entry of every block and every cached fingerprint.
	bad := map[string][]byte{}
	for _, prefix := range []string{"L", "U", "P", "G", "R"} {
		err := st.ScanKVReverse(IndexBucket, prefix, func(k string, _ []byte) error {
			bad[k] = []byte{codecVersion, flagVector, 0xff}
			return errEnough
		})
		if err != nil && err != errEnough {
			t.Fatal(err)
		}
	}
	if err := st.AppendKV(IndexBucket, func(w store.KVWriter) error {
		for k, v := range bad {
			if err := w.Put(k, v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var cached []string
	if err := st.ScanKVReverse(VersionBucket, "", func(k string, _ []byte) error {
		cached = append(cached, k)
		return nil
	}); err != nil || len(cached) == 0 {
		t.Fatalf("no cached fingerprint to damage (%v)", err)
	}
	for _, k := range cached {
		if err := st.PutKV(VersionBucket, k, []byte("\x00{not json")); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		run  func() (Estimate, error)
	}{
		{"advise", func() (Estimate, error) { return Advise(st, &j, DefaultOptions()) }},
		{"submit", func() (Estimate, error) {
			adv, err := ForSubmit(ctx, st, req, Policy{}, DefaultOptions())
			if err != nil {
				return Estimate{}, err
			}
			return adv.Estimate, nil
		}},
	} {
		est, err := c.run()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if est.EstimateS != 600 || len(est.Matches) == 0 || est.Matches[0].JobID == "19" {
			t.Errorf("%s: got %v from %s (matches %+v), want 600s from the intact entries", c.name, est.EstimateS, est.Source, est.Matches)
		}
	}
}
