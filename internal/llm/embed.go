package llm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// maxEmbedBatch bounds how many texts go into one embeddings request.
const maxEmbedBatch = 64

// Embed returns one vector per text from the embedding model, using the
// cache for texts embedded before. All vectors have the same dimension.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if c.cfg.EmbeddingModel == "" {
		return nil, &Error{Op: "embeddings", Kind: KindRejected, Err: errors.New("no embedding_model configured")}
	}
	out := make([][]float32, len(texts))
	keys := make([]string, len(texts))
	var missing []int
	for i, t := range texts {
		key, err := HashKey("embed", c.cfg.EmbeddingModel, Redact(t))
		if err != nil {
			return nil, err
		}
		keys[i] = key
		if v, ok := c.cachedVector(key); ok {
			out[i] = v
			continue
		}
		missing = append(missing, i)
	}
	if hits := len(texts) - len(missing); hits > 0 {
		c.meter.add(Usage{CacheHits: hits})
	}
	for start := 0; start < len(missing); start += maxEmbedBatch {
		batch := missing[start:min(start+maxEmbedBatch, len(missing))]
		input := make([]string, len(batch))
		for j, i := range batch {
			input[j] = Redact(texts[i])
		}
		vecs, err := c.embedBatch(ctx, input)
		if err != nil {
			return nil, err
		}
		for j, i := range batch {
			out[i] = vecs[j]
			c.storeVector(keys[i], vecs[j])
		}
	}
	if err := checkDims(out); err != nil {
		return nil, &Error{Op: "embeddings", Kind: KindBadAnswer, Err: err}
	}
	return out, nil
}

func (c *Client) embedBatch(ctx context.Context, input []string) ([][]float32, error) {
	req := openai.EmbeddingRequestStrings{Input: input, Model: openai.EmbeddingModel(c.cfg.EmbeddingModel)}
	start := time.Now()
	var resp openai.EmbeddingResponse
	err := c.do(ctx, "embeddings", func(ctx context.Context) error {
		var err error
		resp, err = c.api.CreateEmbeddings(ctx, req)
		return err
	})
	u := Usage{Calls: 1, PromptTokens: resp.Usage.PromptTokens, TotalTokens: resp.Usage.TotalTokens}
	c.meter.add(u)
	if err == nil {
		err = orderEmbeddings(resp.Data, len(input))
	}
	c.record("embeddings", "embed", req, start, nil, u, false, time.Since(start), err)
	if err != nil {
		return nil, err
	}
	vecs := make([][]float32, len(input))
	for _, d := range resp.Data {
		vecs[d.Index] = d.Embedding
	}
	return vecs, nil
}

// orderEmbeddings checks that data holds exactly one finite vector per input index.
func orderEmbeddings(data []openai.Embedding, n int) error {
	if len(data) != n {
		return &Error{Op: "embeddings", Kind: KindBadAnswer, Err: fmt.Errorf("%d vectors for %d inputs", len(data), n)}
	}
	seen := make([]bool, n)
	for _, d := range data {
		if d.Index < 0 || d.Index >= n || seen[d.Index] {
			return &Error{Op: "embeddings", Kind: KindBadAnswer, Err: fmt.Errorf("vector index %d out of order", d.Index)}
		}
		seen[d.Index] = true
		if len(d.Embedding) == 0 {
			return &Error{Op: "embeddings", Kind: KindBadAnswer, Err: fmt.Errorf("vector %d is empty", d.Index)}
		}
		for _, x := range d.Embedding {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return &Error{Op: "embeddings", Kind: KindBadAnswer, Err: fmt.Errorf("vector %d is not finite", d.Index)}
			}
		}
	}
	return nil
}

func checkDims(vecs [][]float32) error {
	for i := 1; i < len(vecs); i++ {
		if len(vecs[i]) != len(vecs[0]) {
			return fmt.Errorf("vector %d has %d dimensions, vector 0 has %d", i, len(vecs[i]), len(vecs[0]))
		}
	}
	return nil
}

func (c *Client) cachedVector(key string) ([]float32, bool) {
	if c.cache == nil {
		return nil, false
	}
	b, ok, err := c.cache.Get(key)
	if err != nil || !ok || len(b) == 0 || len(b)%4 != 0 {
		return nil, false
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, true
}

func (c *Client) storeVector(key string, v []float32) {
	if c.cache == nil {
		return
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	_ = c.cache.Put(key, b)
}
