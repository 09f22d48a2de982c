// Package vector turns a job's fields into a small deterministic embedding by
// signed feature hashing, so similar jobs can be found by cosine similarity
// without a model. Vectors are L2-normalised and quantised to int8.
package vector

import (
	"math"
	"strings"
	"unicode"
)

// Dim is the number of components of every vector.
const Dim = 128

// scale maps a unit component to int8.
const scale = 127

// Vec is an L2-normalised vector quantised to int8 (component = value*127).
type Vec [Dim]int8

// Builder accumulates weighted features before normalisation. The zero value
// is ready to use.
type Builder struct {
	acc [Dim]float32
}

// Add hashes one field=value feature with a weight. Empty values add nothing.
func (b *Builder) Add(field, value string, weight float32) {
	if value == "" || weight == 0 {
		return
	}
	h := hash(field, value)
	idx := h % Dim
	if h&(1<<63) != 0 {
		weight = -weight
	}
	b.acc[idx] += weight
}

// AddTokens splits text into lower-case word tokens and adds each under the
// field, sharing the weight so that long texts do not drown other fields.
func (b *Builder) AddTokens(field, text string, weight float32) {
	toks := Tokens(text, 64)
	if len(toks) == 0 {
		return
	}
	w := weight / float32(math.Sqrt(float64(len(toks))))
	for _, t := range toks {
		b.Add(field, t, w)
	}
}

// Vector returns the normalised, quantised vector (all zero when empty).
func (b *Builder) Vector() Vec {
	var sum float64
	for _, x := range b.acc {
		sum += float64(x) * float64(x)
	}
	var v Vec
	if sum == 0 {
		return v
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range b.acc {
		v[i] = int8(math.Round(float64(x) * inv * scale))
	}
	return v
}

// Cosine returns the cosine similarity of two vectors in [-1, 1]; zero
// vectors give 0.
func Cosine(a, b *Vec) float32 { return CosineInt8(a[:], b[:]) }

// CosineInt8 returns the cosine similarity in [-1, 1] of two int8 vectors
// of the same length (b is read up to a's length); zero vectors give 0.
func CosineInt8(a, b []int8) float32 {
	b = b[:len(a)]
	var dot, na, nb int64
	for i, x := range a {
		x, y := int64(x), int64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(float64(dot) / math.Sqrt(float64(na)*float64(nb)))
}

// Tokens splits text into at most limit lower-case tokens of letters and
// digits (with '.', '_' and '-' kept inside tokens), dropping one-letter ones.
func Tokens(text string, limit int) []string {
	var out []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-')
	}) {
		f = strings.Trim(f, ".-_")
		if len(f) < 2 {
			continue
		}
		out = append(out, strings.ToLower(f))
		if len(out) == limit {
			break
		}
	}
	return out
}

// hash is 64-bit FNV-1a over field, a separator and value.
func hash(field, value string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(field); i++ {
		h ^= uint64(field[i])
		h *= prime
	}
	h ^= 0xff
	h *= prime
	for i := 0; i < len(value); i++ {
		h ^= uint64(value[i])
		h *= prime
	}
	// final avalanche so low bits (the index) and the top bit (the sign) mix
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

// Hash64 returns the 64-bit feature hash of a key, for callers that block
// records by a field.
func Hash64(field, value string) uint64 { return hash(field, value) }

// Slot returns the component a field=value feature is hashed to.
func Slot(field, value string) int { return int(hash(field, value) % Dim) }

// CosineWithout is Cosine with the components in skip left out of both
// vectors: it compares what two jobs share besides the features hashed there.
func CosineWithout(a, b *Vec, skip ...int) float32 {
	x, y := *a, *b
	for _, i := range skip {
		if i >= 0 && i < Dim {
			x[i], y[i] = 0, 0
		}
	}
	return Cosine(&x, &y)
}
