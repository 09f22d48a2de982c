// Package shareddata locates the project's shared development corpora (the
// ../shared directory that sits beside a checkout) for tests and benchmarks.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvVar overrides where the shared corpora live.
const EnvVar = "SCHEDMATE_SHARED_DIR"

// Root returns the shared directory: $SCHEDMATE_SHARED_DIR when set, else the
// "shared" directory beside the module root found by walking up from the
// working directory. It returns "" when none exists.
func Root() string {
	if dir := os.Getenv(EnvVar); dir != "" {
		return dir
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			candidate := filepath.Join(filepath.Dir(dir), "shared")
			if fi, err := os.Stat(candidate); err == nil && fi.IsDir() {
				return candidate
			}
			return ""
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// Dir returns the path of a folder under shared/data (for example "failures"),
// skipping the test when the shared corpora are not present.
func Dir(tb testing.TB, name string) string {
	tb.Helper()
	root := Root()
	if root == "" {
		tb.Skipf("shared corpora not found (set %s)", EnvVar)
	}
	dir := filepath.Join(root, "data", name)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("shared corpus %s not found: %v", name, err)
	}
	return dir
}
