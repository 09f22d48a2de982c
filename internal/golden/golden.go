// Package golden compares test output with golden files kept in testdata.
// Run a package's tests with -update to rewrite its golden files from the
// current output, then review the diff.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files from the current output")

// Check fails t when got differs from the golden file at path; with
// -update it first writes got there, creating the directory.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update and review it): %v", err)
	}
	if string(want) != string(got) {
		t.Errorf("output differs from %s (run with -update and review the diff)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
