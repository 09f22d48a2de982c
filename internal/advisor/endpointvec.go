package advisor

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/internal/vector"
)

// An embedding endpoint (any OpenAI-compatible /v1/embeddings) is an
// alternative to the built-in feature-hashed embedding for the similarity
// search, and only for it: the admission analyzer, the weighting, the
// fallback chain and the labels are the same whichever embedding found the
// candidates. Only interactive commands ask the endpoint (`schedmate
// estimate` for the new job, `schedmate history embed` for the recorded
// ones); the hooks never do, so a job recorded by the epilog has no endpoint
// vector until the next `history embed`.

// Embedding labels: which vectors a similarity search compared.
const (
	// EmbeddingBuiltin is the built-in feature-hashed embedding.
	EmbeddingBuiltin = "builtin"
	// embeddingEndpointPrefix prefixes the endpoint model's name.
	embeddingEndpointPrefix = "endpoint:"
)

// EndpointLabel is the embedding label of a similarity search that compared
// the vectors of the named embedding model.
func EndpointLabel(model string) string { return embeddingEndpointPrefix + model }

// Embedder embeds texts, one vector per text; *llm.Client is one. It bounds
// its own calls.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Endpoint is an embedding endpoint the similarity search may compare jobs
// by.
type Endpoint struct {
	// Model names the embedding model. Stored vectors are kept under it, so
	// that vectors of different models are never compared.
	Model string
	// Embedder computes the vectors.
	Embedder Embedder
}

// retrieval says which embedding a similarity search used.
type retrieval struct {
	// Embedding is EmbeddingBuiltin or EndpointLabel(model); empty when no
	// similarity search ran (a resubmission was answered from its earlier
	// runs).
	Embedding string
	// Note says why the endpoint's vectors were not used when they were
	// asked for; empty otherwise.
	Note string
}

// Text bounds: one field, and the whole text.
const (
	maxTextField = 256
	maxText      = 2048
)

// textMetadata are the workload metadata fields the embedding text
// carries, in its order. Other metadata keys are outcomes recorded after
// the job ran (GPU figures, Slurm's own ids) or not workload facts.
var textMetadata = []string{"model", "dataset", "task", "framework", "launcher", "entry", "config",
	"batch_size", "steps", "epochs", "seq_len", "lr", "precision"}

// EmbeddingText renders what a job is as the text the endpoint embeds, one
// "field: value" line per known field in a fixed order: its name and
// program, launch command with its arguments, workload metadata, the base
// name of its working directory, its git branch, partition, QOS and class,
// and the resources it asked for. It leaves out who submitted it and every
// file's content; the LLM client removes secrets before sending. A job with
// no known field gives "", which is not embedded (as the built-in embedding
// of such a job is the zero vector, similar to nothing).
func EmbeddingText(j *JobInfo) string {
	var b strings.Builder
	line := func(field, value string) {
		value = strings.Join(strings.Fields(value), " ")
		if value == "" {
			return
		}
		b.WriteString(field)
		b.WriteString(": ")
		b.WriteString(cutText(value, maxTextField))
		b.WriteByte('\n')
	}
	count := func(n int) string {
		if n <= 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	line("job", j.Name)
	line("program", j.LogicalName)
	line("command", j.Command)
	line("submit line", j.SubmitLine)
	for _, k := range textMetadata {
		line(strings.ReplaceAll(k, "_", " "), j.Metadata[k])
	}
	if j.WorkDir != "" {
		line("workdir", filepath.Base(j.WorkDir))
	}
	line("branch", j.GitBranch)
	line("partition", j.Partition)
	line("qos", j.QOS)
	line("class", j.Class)
	line("nodes", count(j.NumNodes))
	line("cpus", count(j.NumCPUs))
	line("gpus", count(j.GPUs))
	if j.TimeLimitS > 0 {
		line("time limit", FormatSeconds(j.TimeLimitS))
	}
	return strings.TrimSuffix(cutText(b.String(), maxText), "\n")
}

// cutText cuts s to at most n bytes on a rune boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// errEndpointVector reports an endpoint vector that cannot be compared.
var errEndpointVector = errors.New("unusable endpoint vector")

// maxEndpointDims bounds an endpoint vector's length.
const maxEndpointDims = 1 << 16

// QuantizeEndpoint turns an endpoint's vector into the form the index
// compares and stores: int8 components scaled so that the largest is 127.
// Cosine similarity does not depend on the scale, and int8 keeps four times
// as many vectors in the same space as float32 for a cosine error far below
// what the threshold resolves. Empty, oversized, non-finite and zero vectors
// are errors.
func QuantizeEndpoint(v []float32) ([]int8, error) {
	if len(v) == 0 || len(v) > maxEndpointDims {
		return nil, fmt.Errorf("%w: %d dimensions", errEndpointVector, len(v))
	}
	var peak float64
	for _, x := range v {
		f := math.Abs(float64(x))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: not finite", errEndpointVector)
		}
		peak = max(peak, f)
	}
	if peak == 0 {
		return nil, fmt.Errorf("%w: zero vector", errEndpointVector)
	}
	out := make([]int8, len(v))
	for i, x := range v {
		out[i] = int8(math.Round(float64(x) / peak * 127))
	}
	return out, nil
}

// similarity compares the query with a record in the similarity search: by
// endpoint vectors when the query carries one and the record one of the
// same length, else by the built-in vectors. A query carries an endpoint
// vector only when most records the search reads have one (UseEndpoint);
// the few that lack one, such as jobs recorded since the last `history
// embed`, are still compared, by the built-in vectors.
func (q *Query) similarity(r *Record) float32 {
	if q.Endpoint != nil && len(r.Endpoint) == len(q.Endpoint) {
		return vector.CosineInt8(q.Endpoint, r.Endpoint)
	}
	return vector.Cosine(&q.Vec, &r.Vec)
}

// searched calls fn for every record the similarity search for q may read:
// the query's logical-name block and, unless the job's program is named,
// its user's other jobs.
func (ix *Index) searched(q *Query, fn func(*Record)) {
	ix.logical[q.Keys.Logical].newestFirst(func(r *Record) bool { fn(r); return true })
	if q.namedProgram() {
		return
	}
	ix.user[q.Keys.User].newestFirst(func(r *Record) bool {
		if r.LogicalKey != q.Keys.Logical {
			fn(r)
		}
		return true
	})
}

// endpointShare counts the records the similarity search for q reads and
// those among them with an endpoint vector of dims components (of any
// length when dims is 0).
func (ix *Index) endpointShare(q *Query, dims int) (read, with int) {
	ix.searched(q, func(r *Record) {
		read++
		if len(r.Endpoint) > 0 && (dims == 0 || len(r.Endpoint) == dims) {
			with++
		}
	})
	return read, with
}

// enoughEndpoint reports whether the history searched has endpoint vectors
// enough to search by them: at least half of it.
func enoughEndpoint(read, with int) bool { return read > 0 && 2*with >= read }

// shortage says why the history searched is not enough; model names the
// embedding model when known.
func shortage(read, with int, model string) string {
	if read == 0 {
		return "no similar-job history to compare"
	}
	of := "endpoint vectors"
	if model != "" {
		of = "vectors from " + model
	}
	return fmt.Sprintf("only %d of the %d jobs searched have %s (schedmate history embed stores them)", with, read, of)
}

// UseEndpoint decides whether the similarity search for q compares endpoint
// vectors: q must carry one, and at least half of the records the search
// reads one of the same length. Otherwise it clears q.Endpoint, so that the
// search is exactly the built-in one, and says why.
func (ix *Index) UseEndpoint(q *Query) (ok bool, why string) {
	if q.Endpoint == nil {
		return false, "the job has no endpoint vector"
	}
	read, with := ix.endpointShare(q, len(q.Endpoint))
	if enoughEndpoint(read, with) {
		return true, ""
	}
	why = shortage(read, with, "")
	if _, stored := ix.endpointShare(q, 0); read > 0 && enoughEndpoint(read, stored) {
		why = fmt.Sprintf("the endpoint's vector has %d dimensions, %d of the %d stored vectors searched others", len(q.Endpoint), stored-with, stored)
	}
	q.Endpoint = nil
	return false, why
}

// EndpointBucket holds the endpoint vectors of recorded jobs, apart from
// the built-in index: deleting it, or any entry, only returns the searches
// to the built-in embedding. Keys are "<model>\x00<job id>\x00<end>", so
// that vectors of different models never mix; values are
//
//	version u8 | text hash 8 bytes | components int8 ...
//
// where the text hash identifies the EmbeddingText the vector is of, so
// that a job whose description changed is embedded again.
const EndpointBucket = "advisor_endpoint_vectors"

// endpointVersion is the entry encoding's version.
const endpointVersion = 1

// endpointHeader is the entry's length before the components.
const endpointHeader = 1 + 8

// endpointKey is the key of a job's vector from model.
// The job id is cut as the index's records cut it.
func endpointKey(model, jobID string, end int64) string {
	if len(jobID) > maxJobIDLen {
		jobID = jobID[:maxJobIDLen]
	}
	return model + "\x00" + jobID + "\x00" + strconv.FormatInt(end, 10)
}

// textHash identifies an embedding text.
func textHash(text string) uint64 {
	sum := sha256.Sum256([]byte(text))
	return binary.LittleEndian.Uint64(sum[:8])
}

// encodeEndpoint serialises a quantised vector with its text's hash.
func encodeEndpoint(hash uint64, v []int8) []byte {
	b := make([]byte, 0, endpointHeader+len(v))
	b = append(b, endpointVersion)
	b = binary.LittleEndian.AppendUint64(b, hash)
	for _, x := range v {
		b = append(b, byte(x))
	}
	return b
}

// decodeEndpoint parses a stored vector and its text's hash.
func decodeEndpoint(b []byte) (hash uint64, v []int8, err error) {
	if len(b) <= endpointHeader || len(b) > endpointHeader+maxEndpointDims || b[0] != endpointVersion {
		return 0, nil, fmt.Errorf("%w: stored entry of %d bytes", errEndpointVector, len(b))
	}
	v = make([]int8, len(b)-endpointHeader)
	zero := true
	for i := range v {
		v[i] = int8(b[endpointHeader+i])
		zero = zero && v[i] == 0
	}
	if zero {
		return 0, nil, fmt.Errorf("%w: stored zero vector", errEndpointVector)
	}
	return binary.LittleEndian.Uint64(b[1:]), v, nil
}

// attachEndpoint sets the stored endpoint vectors of model on the records
// the similarity search for q reads. Undecodable entries are left out.
func (ix *Index) attachEndpoint(kv KV, model string, q *Query) error {
	var err error
	ix.searched(q, func(r *Record) {
		if err != nil {
			return
		}
		raw, ok, gerr := kv.GetKV(EndpointBucket, endpointKey(model, r.JobID, r.End))
		if gerr != nil {
			err = fmt.Errorf("read endpoint vectors: %w", gerr)
			return
		}
		if ok {
			if _, v, derr := decodeEndpoint(raw); derr == nil {
				r.Endpoint = v
			}
		}
	})
	return err
}

// retrieve prepares the similarity search for q, loaded into ix from kv, to
// compare the endpoint's vectors: it reads the stored ones, and embeds the
// job only when enough of the history searched has them. Whatever fails
// (the store, the endpoint, its answer, the history's vectors) leaves q
// without an endpoint vector, which is the built-in search exactly, and
// says so in the returned note.
func (ep *Endpoint) retrieve(ctx context.Context, kv KV, ix *Index, q *Query, j *JobInfo) retrieval {
	builtin := func(why string) retrieval {
		q.Endpoint = nil
		return retrieval{Embedding: EmbeddingBuiltin, Note: "similar jobs compared by the built-in embedding: " + why}
	}
	if err := ix.attachEndpoint(kv, ep.Model, q); err != nil {
		return builtin(err.Error())
	}
	if read, with := ix.endpointShare(q, 0); !enoughEndpoint(read, with) {
		return builtin(shortage(read, with, ep.Model))
	}
	text := EmbeddingText(j)
	if text == "" {
		return builtin("the job has no field to embed")
	}
	vecs, err := ep.Embedder.Embed(ctx, []string{text})
	if err != nil {
		return builtin(err.Error())
	}
	if len(vecs) != 1 {
		return builtin(fmt.Sprintf("the endpoint answered %d vectors for one text", len(vecs)))
	}
	if q.Endpoint, err = QuantizeEndpoint(vecs[0]); err != nil {
		return builtin(err.Error())
	}
	if ok, why := ix.UseEndpoint(q); !ok {
		return builtin(why)
	}
	return retrieval{Embedding: EndpointLabel(ep.Model)}
}

// EndpointJob is a recorded job whose endpoint vector is missing or out of
// date, with the text to embed.
type EndpointJob struct {
	JobID string
	End   int64
	Text  string
}

// PendingEndpoint returns the ended jobs among jobs that lack a current
// vector from model, newest first (the blocks a search reads keep the
// newest jobs), and how many have one. A vector is current when it was made
// from the job's present EmbeddingText. Jobs without a field to embed are
// in neither.
func PendingEndpoint(kv KV, model string, jobs []*store.Job) (pending []EndpointJob, current int, err error) {
	stored := map[string]uint64{}
	err = kv.ScanKVReverse(EndpointBucket, model+"\x00", func(k string, v []byte) error {
		if h, _, derr := decodeEndpoint(v); derr == nil {
			stored[k] = h
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read endpoint vectors of %s: %w", model, err)
	}
	for _, j := range jobs {
		rec, _, ok := RecordOf(j)
		if !ok {
			continue
		}
		info := InfoFromJob(j)
		text := EmbeddingText(&info)
		if text == "" {
			continue
		}
		if h, ok := stored[endpointKey(model, rec.JobID, rec.End)]; ok && h == textHash(text) {
			current++
			continue
		}
		pending = append(pending, EndpointJob{JobID: rec.JobID, End: rec.End, Text: text})
	}
	slices.SortFunc(pending, func(a, b EndpointJob) int {
		if c := cmp.Compare(b.End, a.End); c != 0 {
			return c
		}
		return strings.Compare(a.JobID, b.JobID)
	})
	return pending, current, nil
}

// PutEndpoint stores the vectors model gave jobs (vecs[i] is jobs[i]'s)
// in one transaction.
func PutEndpoint(kv KV, model string, jobs []EndpointJob, vecs [][]float32) error {
	if len(vecs) != len(jobs) {
		return fmt.Errorf("store endpoint vectors: %d vectors for %d jobs", len(vecs), len(jobs))
	}
	vals := make([][]byte, len(jobs))
	for i := range jobs {
		v, err := QuantizeEndpoint(vecs[i])
		if err != nil {
			return fmt.Errorf("store endpoint vector of job %s: %w", jobs[i].JobID, err)
		}
		vals[i] = encodeEndpoint(textHash(jobs[i].Text), v)
	}
	err := kv.BatchKV(EndpointBucket, func(put func(k string, v []byte) error) error {
		for i := range jobs {
			if err := put(endpointKey(model, jobs[i].JobID, jobs[i].End), vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store %d endpoint vectors: %w", len(jobs), err)
	}
	return nil
}
