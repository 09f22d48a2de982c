package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.golden")
	tests := []struct {
		name     string
		update   bool
		got      string
		wantFail bool
	}{
		{"missing file", false, "a\n", true},
		{"update writes it", true, "a\n", false},
		{"same output", false, "a\n", false},
		{"different output", false, "b\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			*update = tt.update
			defer func() { *update = false }()
			r := &recorder{TB: t}
			Check(r, path, []byte(tt.got))
			if r.failed != tt.wantFail {
				t.Errorf("failed = %v, want %v", r.failed, tt.wantFail)
			}
		})
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\n" {
		t.Errorf("golden file = %q, %v", b, err)
	}
}
