package estimate

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/advisor/advisortest"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
	"github.com/schedmate/schedmate/internal/store"
)

// embeddedHistory records earlier runs of the script with other epoch
// counts (similar jobs, not resubmissions) and stores their vectors from
// srv.
func embeddedHistory(t *testing.T, dir, db string, srv *llmtest.Server) {
	t.Helper()
	req, adv := fingerprinted(t, dir)
	st, err := store.Open(db, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var jobs []*store.Job
	for i, epochs := range []string{"80", "85", "88"} {
		meta := map[string]string{}
		for k, v := range adv.Metadata {
			meta[k] = strings.ReplaceAll(v, "--epochs 90", "--epochs "+epochs)
		}
		meta["epochs"] = epochs
		start := time.Unix(1700000000+int64(i)*9000, 0)
		jobs = append(jobs, &store.Job{JobID: "7" + epochs, User: req.Job.User, Name: "resnet", WorkDir: dir, State: "COMPLETED",
			Start: start, End: start.Add(time.Duration(80+i*5) * time.Minute), TimeLimit: 2 * time.Hour, Metadata: meta})
	}
	if err := advisor.IndexJobs(st, jobs...); err != nil {
		t.Fatal(err)
	}
	advisortest.EmbedAll(t, st, srv.URL, jobs)
}

// runWithLLM runs the command with the llm section pointing at srv. The
// chat model is one the server does not offer, so the metadata agent gives
// up at once and only embeddings are answered.
func runWithLLM(t *testing.T, db string, srv *llmtest.Server, args ...string) (string, error) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := factory.New(ios)
	f.Environ = []string{"SCHEDMATE_STORE_PATH=" + db, "XDG_CONFIG_HOME=" + t.TempDir(), "SCHEDMATE_LLM_ENABLED=true",
		"SCHEDMATE_LLM_BASE_URL=" + srv.URL, "SCHEDMATE_LLM_MODEL=no-chat-model", "SCHEDMATE_LLM_EMBEDDING_MODEL=" + llmtest.EmbeddingModel,
		"SCHEDMATE_LLM_TIMEOUT=2s", "SCHEDMATE_LLM_MAX_RETRIES=0"}
	cmd := NewCmd(f)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	err := cmd.Execute()
	f.Close()
	return out.String(), err
}

// answer is the --json output with its estimate apart.
type answer struct {
	advisor.Estimate
	Embedding      string     `json:"embedding"`
	EmbeddingUsage *llm.Usage `json:"embedding_usage"`
	Notes          []string   `json:"notes"`
}

func decode(t *testing.T, out string) answer {
	t.Helper()
	var a answer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	return a
}

func TestEstimateWithEndpointVectors(t *testing.T) {
	srv := llmtest.New(t)
	dir, db := setup(t)
	embeddedHistory(t, dir, db, srv)
	job := filepath.Join(dir, "job.sh")
	before := srv.Usage()
	out, err := runWithLLM(t, db, srv, "--json", "--chdir", dir, job)
	if err != nil {
		t.Fatal(err)
	}
	got := decode(t, out)
	server := srv.Usage()
	if got.Embedding != "endpoint:test-embed" || got.Source != advisor.SourceSimilar || len(got.Matches) == 0 {
		t.Fatalf("estimate %+v", got)
	}
	if u := got.EmbeddingUsage; u == nil || u.Calls != 1 || u.TotalTokens == 0 || u.TotalTokens != server.TotalTokens-before.TotalTokens {
		t.Errorf("embedding usage %+v; the server counted %d tokens", u, server.TotalTokens-before.TotalTokens)
	}
	// The job's vector is cached by its text: asking again costs nothing.
	out, err = runWithLLM(t, db, srv, "--json", "--chdir", dir, job)
	if again := decode(t, out); err != nil || again.EmbeddingUsage == nil || again.EmbeddingUsage.CacheHits != 1 ||
		again.EmbeddingUsage.Calls != 0 || !reflect.DeepEqual(again.Estimate, got.Estimate) {
		t.Errorf("repeated estimate: %+v, %v", again, err)
	}
	out, err = runWithLLM(t, db, srv, "--chdir", dir, job)
	if err != nil || !regexp.MustCompile(`Embedding: +endpoint:test-embed\n`).MatchString(out) {
		t.Errorf("text output: %v\n%s", err, out)
	}
	out, err = runWithLLM(t, db, srv, "--json", "--no-llm", "--chdir", dir, job)
	if err != nil || strings.Contains(out, `"embedding`) {
		t.Errorf("--no-llm output names an embedding: %v\n%s", err, out)
	}
}

func TestEstimateEndpointFailureKeepsBuiltin(t *testing.T) {
	srv := llmtest.New(t)
	dir, db := setup(t)
	embeddedHistory(t, dir, db, srv)
	job := filepath.Join(dir, "job.sh")
	out, err := runWithLLM(t, db, srv, "--json", "--no-llm", "--chdir", dir, job)
	if err != nil {
		t.Fatal(err)
	}
	off := decode(t, out)
	for _, reply := range []llmtest.Reply{{Status: 503}, {Status: 429, RetryAfter: time.Hour}, {RawBody: "{"}} {
		srv.EnqueueEmbeddings(reply)
		out, err := runWithLLM(t, db, srv, "--json", "--chdir", dir, job)
		if err != nil {
			t.Fatal(err)
		}
		got := decode(t, out)
		if got.Embedding != advisor.EmbeddingBuiltin || !strings.Contains(strings.Join(got.Notes, "\n"), "compared by the built-in embedding: llm embeddings") {
			t.Errorf("reply %+v: embedding %q, notes %q", reply, got.Embedding, got.Notes)
		}
		if !reflect.DeepEqual(got.Estimate, off.Estimate) {
			t.Errorf("reply %+v: estimate %+v differs from the one without the llm %+v", reply, got.Estimate, off.Estimate)
		}
	}
}
