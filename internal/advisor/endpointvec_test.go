package advisor

import (
	"context"
	"math"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/internal/vector"
)

func TestEmbeddingText(t *testing.T) {
	full := JobInfo{
		ID: "42", User: "alice", Account: "ml-secret-project", Partition: "gpu", QOS: "high", Name: "train_7",
		LogicalName: "train", Class: "batch", WorkDir: "/home/alice/llama", Command: "torchrun train.py --lr 3e-4",
		GitBranch: "main", NumNodes: 2, NumCPUs: 32, GPUs: 8, TimeLimitS: 7200,
		Metadata: map[string]string{"model": "llama-7b", "dataset": "c4", "batch_size": "256",
			MetaCommand: "torchrun train.py --lr 3e-4", MetaGitCommit: "abc123", "job_id_raw": "4711", "gpu.node.n1": "{}"},
	}
	tests := []struct {
		name string
		job  JobInfo
		want string
	}{
		{"full", full, "job: train_7\nprogram: train\ncommand: torchrun train.py --lr 3e-4\nmodel: llama-7b\ndataset: c4\n" +
			"batch size: 256\nworkdir: llama\nbranch: main\npartition: gpu\nqos: high\nclass: batch\nnodes: 2\ncpus: 32\ngpus: 8\ntime limit: 2h00m"},
		{"spaces folded", JobInfo{Name: "a  b\n c", Command: "\tpython x.py "}, "job: a b c\ncommand: python x.py"},
		{"nothing known", JobInfo{User: "bob", Account: "x", ID: "1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EmbeddingText(&tt.job); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	long := JobInfo{Name: strings.Repeat("é", 400), Command: strings.Repeat("x ", 5000)}
	if got := EmbeddingText(&long); len(got) > maxText || !strings.HasPrefix(got, "job: é") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("long text not bounded on a rune boundary: %d bytes", len(got))
	}
}

func TestQuantizeEndpoint(t *testing.T) {
	tests := []struct {
		name string
		in   []float32
		want []int8
		bad  bool
	}{
		{"scaled to the peak", []float32{0.5, -0.25, 0}, []int8{127, -64, 0}, false},
		{"empty", nil, nil, true},
		{"zero", []float32{0, 0}, nil, true},
		{"nan", []float32{1, float32(math.NaN())}, nil, true},
		{"inf", []float32{float32(math.Inf(-1))}, nil, true},
		{"too long", make([]float32, maxEndpointDims+1), nil, true},
	}
	for _, tt := range tests {
		got, err := QuantizeEndpoint(tt.in)
		if (err != nil) != tt.bad || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, %v", tt.name, got, err)
		}
	}
}

func TestEndpointCodecRoundTrip(t *testing.T) {
	v := []int8{1, -2, 127, -128}
	h, got, err := decodeEndpoint(encodeEndpoint(99, v))
	if err != nil || h != 99 || !reflect.DeepEqual(got, v) {
		t.Fatalf("round trip: %d %v %v", h, got, err)
	}
	for _, bad := range [][]byte{nil, {endpointVersion}, encodeEndpoint(1, []int8{0, 0}), append([]byte{7}, encodeEndpoint(1, v)[1:]...)} {
		if _, _, err := decodeEndpoint(bad); err == nil {
			t.Errorf("decoded %v", bad)
		}
	}
}

func FuzzDecodeEndpoint(f *testing.F) {
	f.Add(encodeEndpoint(7, []int8{3, -4, 5}))
	f.Add([]byte{endpointVersion, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, v, err := decodeEndpoint(b)
		if err != nil {
			return
		}
		h2, v2, err := decodeEndpoint(encodeEndpoint(h, v))
		if err != nil || h2 != h || !reflect.DeepEqual(v2, v) {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

func TestUseEndpointCoverage(t *testing.T) {
	j := JobInfo{User: "alice", Name: "train", Command: "python train.py"}
	with := func(n int, v []int8) Record {
		r := ended(j, int64(n), 100, StateCompleted)
		r.JobID, r.Endpoint = strconv.Itoa(n), v
		return r
	}
	v3 := []int8{1, 2, 3}
	tests := []struct {
		name    string
		history []Record
		query   []int8
		ok      bool
		why     string
	}{
		{"no query vector", []Record{with(1, v3)}, nil, false, "no endpoint vector"},
		{"no history", nil, v3, false, "no similar-job history"},
		{"half the history", []Record{with(1, v3), with(2, nil)}, v3, true, ""},
		{"too little", []Record{with(1, v3), with(2, nil), with(3, nil)}, v3, false, "only 1 of the 3"},
		{"other dimensions", []Record{with(1, v3), with(2, v3)}, []int8{1, 2}, false, "2 dimensions, 2 of the 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := NewIndex()
			for _, r := range tt.history {
				ix.Add(r)
			}
			q := QueryOf(&j)
			q.Endpoint = tt.query
			ok, why := ix.UseEndpoint(&q)
			if ok != tt.ok || !strings.Contains(why, tt.why) {
				t.Fatalf("UseEndpoint = %v %q, want %v %q", ok, why, tt.ok, tt.why)
			}
			if !ok && q.Endpoint != nil {
				t.Error("a refused query keeps its endpoint vector")
			}
		})
	}
}

func TestSimilarityMixesOnlyWhereVectorsLack(t *testing.T) {
	j := JobInfo{User: "alice", Name: "train", Command: "python train.py"}
	q := QueryOf(&j)
	q.Endpoint = []int8{10, 0}
	r := ended(j, 1, 100, StateCompleted)
	if got := q.similarity(&r); got != vector.Cosine(&q.Vec, &r.Vec) {
		t.Errorf("record without a vector: %v, want the built-in cosine", got)
	}
	r.Endpoint = []int8{0, 10}
	if got := q.similarity(&r); got != 0 {
		t.Errorf("orthogonal endpoint vectors: %v, want 0", got)
	}
}

// endpointClient is an LLM client for srv (or url when not empty).
func endpointClient(t *testing.T, url string, edit func(*llm.Config)) *llm.Client {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.Enabled, cfg.BaseURL, cfg.Model, cfg.EmbeddingModel = true, url, llmtest.Model, llmtest.EmbeddingModel
	cfg.Timeout, cfg.MaxRetries = 2*time.Second, 0
	if edit != nil {
		edit(&cfg)
	}
	c, err := llm.New(cfg, llm.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// embeddedHistory records alice's runs of one training program (and of
// another one) and stores their endpoint vectors from the test server.
func embeddedHistory(t *testing.T, kv KV, c *llm.Client) []*store.Job {
	t.Helper()
	base := time.Unix(1_700_000_000, 0)
	var jobs []*store.Job
	for i := range 8 {
		name, cmd := "train", "python train.py --model resnet50 --epochs "+strconv.Itoa(80+i)
		if i%4 == 3 {
			name, cmd = "prep", "python prep.py --shard "+strconv.Itoa(i)
		}
		start := base.Add(time.Duration(i) * 3 * time.Hour)
		jobs = append(jobs, &store.Job{JobID: strconv.Itoa(100 + i), User: "alice", Name: name, Partition: "gpu",
			WorkDir: "/home/alice/vision", State: "COMPLETED", Start: start, End: start.Add(time.Duration(60+10*i) * time.Minute),
			TimeLimit: 4 * time.Hour, NumGPUs: 4, Metadata: map[string]string{MetaCommand: cmd, "model": "resnet50"}})
	}
	if err := IndexJobs(kv, jobs...); err != nil {
		t.Fatal(err)
	}
	pending, current, err := PendingEndpoint(kv, llmtest.EmbeddingModel, jobs)
	if err != nil || current != 0 || len(pending) != len(jobs) {
		t.Fatalf("pending %d, current %d, %v", len(pending), current, err)
	}
	texts := make([]string, len(pending))
	for i := range pending {
		texts[i] = pending[i].Text
	}
	vecs, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if err := PutEndpoint(kv, llmtest.EmbeddingModel, pending, vecs); err != nil {
		t.Fatal(err)
	}
	return jobs
}

func TestAdviseWithEndpoint(t *testing.T) {
	query := JobInfo{User: "alice", Name: "train", Partition: "gpu", WorkDir: "/home/alice/vision", GPUs: 4, TimeLimitS: 14400,
		Command: "python train.py --model resnet50 --epochs 95", Metadata: map[string]string{"model": "resnet50"}}
	downURL := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/v1"
	}
	tests := []struct {
		name      string
		replies   []llmtest.Reply
		url       func(*testing.T) string
		model     string
		timeout   time.Duration
		embedding string
		note      string
		calls     int // embedding requests the estimate made
	}{
		{name: "endpoint vectors", embedding: "endpoint:test-embed", calls: 1},
		{name: "endpoint down", url: downURL, embedding: "builtin", note: "unavailable"},
		{name: "rate limited", replies: []llmtest.Reply{{Status: 429, RetryAfter: time.Hour}}, embedding: "builtin", note: "rate-limited", calls: 1},
		{name: "slow past the timeout", replies: []llmtest.Reply{{Delay: 5 * time.Second}}, timeout: 200 * time.Millisecond,
			embedding: "builtin", note: "timeout", calls: 1},
		{name: "wrong dimensions", replies: []llmtest.Reply{{RawBody: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.5,0.5]}],"model":"test-embed","usage":{"prompt_tokens":9,"total_tokens":9}}`}},
			embedding: "builtin", note: "3 dimensions", calls: 1},
		{name: "garbage", replies: []llmtest.Reply{{RawBody: "not json at all"}}, embedding: "builtin", note: "bad-answer", calls: 1},
		{name: "model changed", model: "new-embed", embedding: "builtin", note: "0 of the 8 jobs searched have vectors from new-embed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.SetModels(llmtest.Model, llmtest.EmbeddingModel, "new-embed")
			kv := newMemKV()
			embeddedHistory(t, kv, endpointClient(t, srv.URL, nil))
			url := srv.URL
			if tt.url != nil {
				url = tt.url(t)
			}
			model := llmtest.EmbeddingModel
			if tt.model != "" {
				model = tt.model
			}
			client := endpointClient(t, url, func(c *llm.Config) {
				c.EmbeddingModel = model
				if tt.timeout > 0 {
					c.Timeout = tt.timeout
				}
			})
			srv.EnqueueEmbeddings(tt.replies...)
			before := srv.Usage()
			j := query
			est, ret, err := advise(context.Background(), kv, &j, DefaultOptions(), &Endpoint{Model: model, Embedder: client})
			if err != nil {
				t.Fatal(err)
			}
			after := srv.Usage()
			// A scripted fault answers outside the server's counts.
			if calls := after.EmbeddingCalls - before.EmbeddingCalls; tt.replies == nil && calls != tt.calls {
				t.Errorf("%d embedding requests, want %d", calls, tt.calls)
			}
			if ret.Embedding != tt.embedding || !strings.Contains(ret.Note, tt.note) {
				t.Fatalf("retrieval %+v, want %s with a note holding %q", ret, tt.embedding, tt.note)
			}
			builtin, err := Advise(kv, &j, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			if tt.embedding == EmbeddingBuiltin {
				if !reflect.DeepEqual(est, builtin) {
					t.Errorf("fallback estimate %+v differs from the built-in one %+v", est, builtin)
				}
				return
			}
			// The matches carry the endpoint vectors' similarity, not the
			// built-in one: the similarity search compared the former.
			if est.Source != SourceSimilar || len(est.Matches) == 0 {
				t.Fatalf("estimate %+v, want similar jobs", est)
			}
			if usage := client.Usage(); usage.TotalTokens != after.TotalTokens-before.TotalTokens || usage.TotalTokens == 0 {
				t.Errorf("client counted %+v, server %d tokens", usage, after.TotalTokens-before.TotalTokens)
			}
			assertEndpointSimilarity(t, &j, est.Matches[0])
		})
	}
}

// assertEndpointSimilarity checks that a match's similarity is that of the
// test server's vectors and not of the built-in ones.
func assertEndpointSimilarity(t *testing.T, q *JobInfo, m Match) {
	t.Helper()
	id, _ := strconv.Atoi(m.JobID)
	i := id - 100
	rec := JobInfo{User: "alice", Name: "train", Partition: "gpu", WorkDir: "/home/alice/vision", GPUs: 4, TimeLimitS: 14400,
		Command:  "python train.py --model resnet50 --epochs " + strconv.Itoa(80+i),
		Metadata: map[string]string{MetaCommand: "python train.py --model resnet50 --epochs " + strconv.Itoa(80+i), "model": "resnet50"}}
	qv, _ := QuantizeEndpoint(llmtest.Vector(EmbeddingText(q)))
	rv, _ := QuantizeEndpoint(llmtest.Vector(EmbeddingText(&rec)))
	want := math.Round(float64(vector.CosineInt8(qv, rv))*1000) / 1000
	if m.Similarity != want {
		t.Errorf("match %s similarity %v, want the endpoint's %v", m.JobID, m.Similarity, want)
	}
	bq, br := Embed(q), Embed(&rec)
	if b := math.Round(float64(vector.Cosine(&bq, &br))*1000) / 1000; b == want {
		t.Fatalf("built-in and endpoint similarity agree (%v): the test cannot tell them apart", b)
	}
}

func TestPendingEndpointIsIncremental(t *testing.T) {
	srv := llmtest.New(t)
	kv := newMemKV()
	jobs := embeddedHistory(t, kv, endpointClient(t, srv.URL, nil))
	pending, current, err := PendingEndpoint(kv, llmtest.EmbeddingModel, jobs)
	if err != nil || len(pending) != 0 || current != len(jobs) {
		t.Fatalf("after embedding: %d pending, %d current, %v", len(pending), current, err)
	}
	jobs[2].Metadata["dataset"] = "imagenet" // its description changed
	pending, current, err = PendingEndpoint(kv, llmtest.EmbeddingModel, jobs)
	if err != nil || len(pending) != 1 || pending[0].JobID != jobs[2].JobID || current != len(jobs)-1 {
		t.Fatalf("after a change: %+v, %d current, %v", pending, current, err)
	}
	if pending, current, _ = PendingEndpoint(kv, "other-model", jobs); len(pending) != len(jobs) || current != 0 ||
		pending[0].End < pending[len(pending)-1].End {
		t.Errorf("another model: %d pending newest first?, %d current", len(pending), current)
	}
}
