package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type payload struct {
	N int `json:"n"`
}

func TestWriteAndDrainInOrder(t *testing.T) {
	sp := New(filepath.Join(t.TempDir(), "db.spool"))
	for i := range 5 {
		if err := sp.Write("end", payload{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	var got []int
	res, err := sp.Drain(func(r Record) error {
		if r.Kind != "end" || r.Name == "" || r.Time.IsZero() {
			t.Errorf("record = %+v", r)
		}
		var p payload
		if err := json.Unmarshal(r.Data, &p); err != nil {
			return err
		}
		got = append(got, p.N)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied != 5 || fmt.Sprint(got) != "[0 1 2 3 4]" {
		t.Fatalf("applied %d: %v", res.Applied, got)
	}
	if left, _ := sp.Pending(); len(left) != 0 {
		t.Fatalf("pending after drain: %v", left)
	}
}

func TestDrainStopsAtError(t *testing.T) {
	sp := New(t.TempDir())
	for i := range 3 {
		if err := sp.Write("k", payload{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	fail := errors.New("database locked")
	calls := 0
	res, err := sp.Drain(func(r Record) error {
		calls++
		if calls == 2 {
			return fail
		}
		return nil
	})
	if !errors.Is(err, fail) || res.Applied != 1 {
		t.Fatalf("Drain = %+v, %v", res, err)
	}
	if left, _ := sp.Pending(); len(left) != 2 {
		t.Fatalf("pending = %d, want 2 kept after the failure", len(left))
	}
}

func TestDrainSetsAsideUnreadable(t *testing.T) {
	dir := t.TempDir()
	sp := New(dir)
	if err := sp.Write("k", payload{N: 1}); err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"00000000000000000001-1-a.json": []byte("{truncated"),
		"00000000000000000002-1-b.json": {0xff, 0x00, 0xfe},
		"00000000000000000003-1-c.json": []byte(`{"data":{}}`),
		"00000000000000000004-1-d.json": []byte(strings.Repeat(" ", MaxRecordBytes+1)),
	}
	for name, data := range bad {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, tempPrefix+"half"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sp.Write("unknown-kind", payload{N: 2}); err != nil {
		t.Fatal(err)
	}
	res, err := sp.Drain(func(r Record) error {
		if r.Kind == "unknown-kind" {
			return ErrSkip
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied != 1 || res.SetAside != len(bad)+1 {
		t.Fatalf("Drain = %+v", res)
	}
	for name := range bad {
		if _, err := os.Stat(filepath.Join(dir, name+badExt)); err != nil {
			t.Errorf("%s not kept aside: %v", name, err)
		}
	}
}

func TestDrainMissingDirectory(t *testing.T) {
	res, err := New(filepath.Join(t.TempDir(), "absent")).Drain(func(Record) error { return nil })
	if err != nil || res.Applied != 0 {
		t.Fatalf("Drain of missing spool = %+v, %v", res, err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	sp := New(t.TempDir())
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := sp.Write("k", payload{N: i}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	names, err := sp.Pending()
	if err != nil || len(names) != 50 {
		t.Fatalf("pending = %d, %v; want 50", len(names), err)
	}
}

func TestWriteRejectsOversized(t *testing.T) {
	sp := New(t.TempDir())
	if err := sp.Write("k", strings.Repeat("x", MaxRecordBytes)); err == nil {
		t.Fatal("oversized record accepted")
	}
}
