package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzOpenDamaged opens database files with damaged pages: Open and reads
// must fail cleanly, never panic or fault.
func FuzzOpenDamaged(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.db")
	st, err := Open(path, Options{})
	if err != nil {
		f.Fatal(err)
	}
	for _, id := range []string{"1", "2", "3"} {
		if err := st.PutJob(&Job{JobID: id, Name: "train"}); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := st.Audit(AuditEntry{Action: "drain", Target: "gpu01"}); err != nil {
		f.Fatal(err)
	}
	st.Close()
	seed, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(9000), []byte{0xff, 0xff, 0xff, 0xff}, uint32(0))
	f.Add(uint32(0), []byte("garbage"), uint32(0))
	f.Add(uint32(16384), []byte{0, 0, 0, 0, 0, 0, 0, 0}, uint32(20000))
	f.Fuzz(func(t *testing.T, at uint32, patch []byte, cut uint32) {
		// Overwrite bytes at an offset, then optionally truncate.
		data := append([]byte(nil), seed...)
		copy(data[int(at)%len(data):], patch)
		if cut > 0 {
			data = data[:int(cut)%len(data)]
		}
		p := filepath.Join(t.TempDir(), "db")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := Open(p, Options{ReadOnly: true})
		if err != nil {
			return
		}
		defer st.Close()
		_ = st.ForEachJob(func(*Job) error { return nil })
		_, _ = st.GetJob("2")
		_, _ = st.AuditEntries(zeroTime, 0)
		_, _ = st.NodeEvidence("gpu01", zeroTime)
		_ = st.ScanKV("x", "", func(string, []byte) error { return nil })
	})
}

var zeroTime time.Time
