package factory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/store"
)

func newTestFactory(t *testing.T) (*Factory, string) {
	t.Helper()
	io, _, _, _ := iostreams.Test()
	f := New(io)
	db := filepath.Join(t.TempDir(), "schedmate.db")
	f.Environ = []string{"HOME=" + t.TempDir(), "SCHEDMATE_STORE_PATH=" + db}
	return f, db
}

func TestStoreIsLazyAndReleasable(t *testing.T) {
	f, db := newTestFactory(t)
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("database exists before anything asked for it: %v", err)
	}
	st, err := f.Store()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := f.Store(); again != st {
		t.Error("Store must return the open handle")
	}
	f.ReleaseStore()
	// Another process-like open must now get the lock at once.
	other, err := store.Open(db, store.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("lock still held after ReleaseStore: %v", err)
	}
	other.Close()
	reopened, err := f.Store()
	if err != nil || reopened == st {
		t.Fatalf("Store after ReleaseStore = %p, %v; want a new handle", reopened, err)
	}
	f.Close()
}

func TestStoreError(t *testing.T) {
	tests := []struct {
		err  error
		want exitcode.Code
	}{
		{fmt.Errorf("open: %w", store.ErrLocked), exitcode.Locked},
		{fmt.Errorf("open: %w", store.ErrCorrupt), exitcode.DataErr},
		{fmt.Errorf("open: %w", os.ErrNotExist), exitcode.NotFound},
		{errors.New("other"), exitcode.Error},
	}
	for _, tt := range tests {
		if got := exitcode.Of(StoreError(tt.err)); got != tt.want {
			t.Errorf("StoreError(%v) code = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestBadConfigIsAUsageError(t *testing.T) {
	f, _ := newTestFactory(t)
	f.Environ = append(f.Environ, "SCHEDMATE_ADVISOR_TOP_K=many")
	_, err := f.Config()
	if exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("Config() = %v, want a usage error", err)
	}
	if _, err := f.Store(); err == nil {
		t.Fatal("Store must fail when the configuration is bad")
	}
}
