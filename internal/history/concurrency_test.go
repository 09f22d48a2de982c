package history

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
)

// childEnv makes the re-executed test binary act as one epilog process
// recording the job named by the variable into the store at childDBEnv.
const (
	childJobEnv = "SCHEDMATE_HISTORY_TEST_JOB"
	childDBEnv  = "SCHEDMATE_HISTORY_TEST_DB"
)

func TestMain(m *testing.M) {
	if id := os.Getenv(childJobEnv); id != "" {
		os.Exit(recordAsChild(id, os.Getenv(childDBEnv)))
	}
	os.Exit(m.Run())
}

func recordAsChild(id, dbPath string) int {
	end, err := EndFromEnv(map[string]string{"SLURM_JOB_ID": id, "SLURM_JOB_USER": "alice", "SLURM_JOB_EXIT_CODE2": "0:0"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	open := func() (*store.Store, error) {
		return store.Open(dbPath, store.Options{Timeout: 30 * time.Millisecond})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, _, err := CaptureEnd(ctx, open, Places{Spool: spool.ForStore(dbPath)}, end); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestConcurrentEpilogsLoseNothing runs many epilog processes at once
// against one database with a short lock timeout: each record reaches the
// database or the spool, and after a drain every job is in the history.
func TestConcurrentEpilogsLoseNothing(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "schedmate.db")
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", childJobEnv, 1000+i), childDBEnv+"="+dbPath)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("epilog process %d: %v\n%s", i, err, out)
			}
		})
	}
	wg.Wait()
	st, err := store.Open(dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := DrainSpool(st, spool.ForStore(dbPath)); err != nil {
		t.Fatal(err)
	}
	count := 0
	if err := st.ForEachJob(func(*store.Job) error { count++; return nil }); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("history holds %d jobs, want %d", count, n)
	}
}
