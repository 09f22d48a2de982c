package history

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
	"github.com/schedmate/schedmate/internal/store"
)

// llmEnv configures the llm section for srv.
func llmEnv(srv *llmtest.Server, timeout string) []string {
	return []string{"SCHEDMATE_LLM_ENABLED=true", "SCHEDMATE_LLM_BASE_URL=" + srv.URL, "SCHEDMATE_LLM_MODEL=" + llmtest.Model,
		"SCHEDMATE_LLM_EMBEDDING_MODEL=" + llmtest.EmbeddingModel, "SCHEDMATE_LLM_TIMEOUT=" + timeout, "SCHEDMATE_LLM_MAX_RETRIES=0"}
}

// seedEnded records n ended jobs and one still running, in one transaction.
func (h *harness) seedEnded(n int) {
	h.t.Helper()
	st, err := store.Open(h.dbPath, store.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.Close()
	ids := make([]string, n+1)
	for i := range ids {
		ids[i] = strconv.Itoa(1000 + i)
	}
	err = st.UpdateJobs(ids, func(j *store.Job, _ bool) error {
		i, _ := strconv.Atoi(j.JobID)
		i -= 1000
		j.User, j.Name, j.Partition, j.State = "alice", "train", "gpu", "COMPLETED"
		j.Metadata = map[string]string{advisor.MetaCommand: "python train.py --seed " + strconv.Itoa(i)}
		j.Start = base.Add(time.Duration(i) * time.Hour)
		if i < n {
			j.End = j.Start.Add(30 * time.Minute)
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// embedRun runs `history embed --json` and decodes its summary.
func (h *harness) embedRun(args ...string) (embedSummary, error) {
	h.t.Helper()
	out, _, err := h.run(true, "", append([]string{"embed"}, args...)...)
	var sum embedSummary
	if jerr := json.Unmarshal([]byte(out), &sum); jerr != nil {
		h.t.Fatalf("embed %v: not one JSON summary (%v): %q", args, jerr, out)
	}
	return sum, err
}

func TestEmbedNeedsAnEmbeddingModel(t *testing.T) {
	h := newHarness(t)
	h.seedEnded(1)
	if _, _, err := h.run(false, "", "embed"); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("embed without llm: %v, want a usage error", err)
	}
	if _, _, err := h.run(false, "", "embed", "--limit", "-1"); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("negative limit: %v", err)
	}
}

func TestEmbedIsResumableAndIdempotent(t *testing.T) {
	srv := llmtest.New(t)
	h := newHarness(t)
	h.env = llmEnv(srv, "5s")
	h.seedEnded(5)

	sum, err := h.embedRun("--dry-run")
	if err != nil || sum.Jobs != 5 || sum.Remaining != 5 || sum.Embedded != 0 || !sum.DryRun || srv.Usage().EmbeddingCalls != 0 {
		t.Fatalf("dry run: %+v, %v, server %+v", sum, err, srv.Usage())
	}
	sum, err = h.embedRun("--limit", "2")
	if err != nil || sum.Embedded != 2 || sum.Remaining != 3 || sum.Current != 0 || sum.Dimensions != llmtest.Dimensions {
		t.Fatalf("--limit 2: %+v, %v", sum, err)
	}
	server := srv.Usage()
	if sum.Usage.TotalTokens != server.TotalTokens || sum.Usage.TotalTokens == 0 ||
		sum.TokensPerJob != float64(int(float64(server.TotalTokens)/2*10+0.5))/10 {
		t.Errorf("usage %+v, %.1f per job; the server counted %+v", sum.Usage, sum.TokensPerJob, server)
	}
	sum, err = h.embedRun()
	if err != nil || sum.Embedded != 3 || sum.Current != 2 || sum.Remaining != 0 {
		t.Fatalf("resumed run: %+v, %v", sum, err)
	}
	calls := srv.Usage().EmbeddingCalls
	sum, err = h.embedRun()
	if err != nil || sum.Embedded != 0 || sum.Current != 5 || srv.Usage().EmbeddingCalls != calls {
		t.Fatalf("third run: %+v, %v; %d calls before, %d after", sum, err, calls, srv.Usage().EmbeddingCalls)
	}
	out, _, err := h.run(false, "", "embed")
	if err != nil || !strings.Contains(out, "embedded 0 jobs with test-embed") || !strings.Contains(out, "5 already had a vector, 0 still lack one") {
		t.Errorf("text summary %q, %v", out, err)
	}
}

func TestEmbedStopsOnEndpointFailure(t *testing.T) {
	tests := []struct {
		name    string
		reply   llmtest.Reply
		timeout string
		code    exitcode.Code
	}{
		{"unavailable", llmtest.Reply{Status: 503}, "5s", exitcode.Unavailable},
		{"slow", llmtest.Reply{Delay: 5 * time.Second}, "200ms", exitcode.Timeout},
		{"garbage", llmtest.Reply{RawBody: "not json"}, "5s", exitcode.DataErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			h := newHarness(t)
			h.env = llmEnv(srv, tt.timeout)
			h.seedEnded(3)
			srv.EnqueueEmbeddings(tt.reply)
			sum, err := h.embedRun()
			if exitcode.Of(err) != tt.code || sum.Embedded != 0 || sum.Remaining != 3 {
				t.Fatalf("failed run: %+v, %v (exit %d), want exit %d", sum, err, exitcode.Of(err), tt.code)
			}
			if sum, err = h.embedRun(); err != nil || sum.Embedded != 3 {
				t.Errorf("next run: %+v, %v", sum, err)
			}
		})
	}
}

func TestEmbedReleasesTheDatabaseBetweenBatches(t *testing.T) {
	srv := llmtest.New(t)
	h := newHarness(t)
	h.env = llmEnv(srv, "5s")
	h.seedEnded(embedBatch + 10)
	sum, err := h.embedRun()
	if err != nil || sum.Embedded != embedBatch+10 {
		t.Fatalf("embed: %+v, %v", sum, err)
	}
	// Every request is audited, those after the database was released and
	// opened again included.
	out, _, err := h.run(true, "", "audit", "--limit", "0")
	var entries []store.AuditEntry
	if err != nil || json.Unmarshal([]byte(out), &entries) != nil {
		t.Fatalf("audit: %v %q", err, out)
	}
	n := 0
	for _, e := range entries {
		if e.Action == "llm.embeddings" {
			n++
		}
	}
	if n != srv.Usage().EmbeddingCalls || n < 2 {
		t.Errorf("%d audited embedding requests, the server answered %d", n, srv.Usage().EmbeddingCalls)
	}
}
