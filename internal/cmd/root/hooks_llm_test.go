package root

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/advisor/advisortest"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
	"github.com/schedmate/schedmate/internal/store"
)

// embedHistory records user's earlier runs of the program in work, with
// their vectors from srv, so that an estimate may compare endpoint vectors.
func embedHistory(t *testing.T, db, work, user string, srv *llmtest.Server) {
	t.Helper()
	st, err := store.Open(db, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var jobs []*store.Job
	for i := range 3 {
		start := time.Unix(1_700_000_000+int64(i)*7200, 0)
		jobs = append(jobs, &store.Job{JobID: strconv.Itoa(100 + i), User: user, Name: "train", Partition: "gpu", WorkDir: work,
			State: "COMPLETED", Start: start, End: start.Add(40 * time.Minute), TimeLimit: time.Hour,
			Metadata: map[string]string{advisor.MetaCommand: "python train.py --epochs " + strconv.Itoa(80+i)}})
	}
	if err := advisor.IndexJobs(st, jobs...); err != nil {
		t.Fatal(err)
	}
	advisortest.EmbedAll(t, st, srv.URL, jobs)
}

func TestHooksNeverCallTheEmbeddingEndpoint(t *testing.T) {
	srv := llmtest.New(t)
	dir := t.TempDir()
	db, work := filepath.Join(dir, "schedmate.db"), filepath.Join(dir, "exp")
	if err := os.MkdirAll(filepath.Join(dir, "no-slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(work, "train.sbatch")
	body := "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --time=01:00:00\npython train.py --epochs 90\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// estimate describes the job as the current user's
	me, err := user.Current()
	if err != nil {
		t.Skip("no current user:", err)
	}
	embedHistory(t, db, work, me.Username, srv)
	environ := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "SCHEDMATE_STORE_PATH=" + db,
		"SCHEDMATE_SLURM_BIN_DIR=" + filepath.Join(dir, "no-slurm"), "SCHEDMATE_HOOKS_EPILOG_DEADLINE=3s",
		"SCHEDMATE_LLM_ENABLED=true", "SCHEDMATE_LLM_BASE_URL=" + srv.URL, "SCHEDMATE_LLM_MODEL=no-chat-model",
		"SCHEDMATE_LLM_EMBEDDING_MODEL=" + llmtest.EmbeddingModel, "SCHEDMATE_LLM_MAX_RETRIES=0"}

	// The endpoint is configured and usable: the estimate command asks it.
	before := srv.Usage()
	code, out, errOut := run(t, environ, "estimate", "--json", "--chdir", work, script)
	if code != 0 || !strings.Contains(out, `"embedding": "endpoint:test-embed"`) || srv.Usage().EmbeddingCalls != before.EmbeddingCalls+1 {
		t.Fatalf("estimate: exit %d, %d embedding calls\n%s\n%s", code, srv.Usage().EmbeddingCalls-before.EmbeddingCalls, out, errOut)
	}

	before = srv.Usage()
	code, out, errOut = run(t, environ, "hook", "submit", "--script-file", script, "--user", me.Username, "--workdir", work,
		"--name", "train", "--partition", "gpu", "--time-limit", "60", "--argv", "train.sbatch")
	if code != 0 || !strings.HasPrefix(out, "admin_comment=schedmate: est=") {
		t.Fatalf("hook submit: exit %d\n%s\n%s", code, out, errOut)
	}
	now := time.Now()
	epilog := append(environ, "SLURM_SCRIPT_CONTEXT=epilog_slurmctld", "SLURM_JOB_ID=4242", "SLURM_JOB_USER="+me.Username,
		"SLURM_JOB_PARTITION=gpu", "SLURM_JOB_NAME=train", "SLURM_JOB_WORK_DIR="+work, "SLURM_JOB_EXIT_CODE2=0:0",
		"SLURM_JOB_START_TIME="+strconv.FormatInt(now.Add(time.Second).Unix(), 10),
		"SLURM_JOB_END_TIME="+strconv.FormatInt(now.Add(time.Hour).Unix(), 10))
	if code, out, errOut = run(t, epilog, "hook", "epilog"); code != 0 {
		t.Fatalf("hook epilog: exit %d\n%s\n%s", code, out, errOut)
	}
	if after := srv.Usage(); after != before {
		t.Errorf("the hooks reached the endpoint: before %+v, after %+v", before, after)
	}
}
