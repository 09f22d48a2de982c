package vector

import (
	"reflect"
	"testing"
)

func build(fields map[string]string) Vec {
	var b Builder
	for k, v := range fields {
		b.Add(k, v, 1)
	}
	return b.Vector()
}

func TestCosine(t *testing.T) {
	a := build(map[string]string{"user": "alice", "name": "train", "model": "llama"})
	same := build(map[string]string{"model": "llama", "name": "train", "user": "alice"})
	near := build(map[string]string{"user": "alice", "name": "train", "model": "mistral"})
	far := build(map[string]string{"user": "bob", "name": "sim", "model": "none"})
	var zero Vec
	tests := []struct {
		name     string
		x, y     Vec
		min, max float32
	}{
		{"identical, any insertion order", a, same, 0.999, 1.001},
		{"two of three fields shared", a, near, 0.45, 0.85},
		{"nothing shared", a, far, -0.5, 0.5},
		{"zero vector", a, zero, 0, 0},
	}
	for _, tc := range tests {
		if got := Cosine(&tc.x, &tc.y); got < tc.min || got > tc.max {
			t.Errorf("%s: cosine %v, want in [%v, %v]", tc.name, got, tc.min, tc.max)
		}
	}
}

func TestCosineWithout(t *testing.T) {
	var a, b Builder
	a.Add("user", "alice", 1)
	a.Add("program", "train", 3)
	b.Add("user", "alice", 1)
	b.Add("program", "train", 3)
	b.Add("class", "2", 1)
	x, y := a.Vector(), b.Vector()
	program := Slot("program", "train")
	tests := []struct {
		name     string
		skip     []int
		min, max float32
	}{
		{"nothing left out", nil, 0.9, 1},
		{"shared program left out", []int{program}, 0.6, 0.8},
		{"out-of-range slots ignored", []int{-1, Dim}, 0.9, 1},
	}
	for _, tc := range tests {
		if got := CosineWithout(&x, &y, tc.skip...); got < tc.min || got > tc.max {
			t.Errorf("%s: cosine %v, want in [%v, %v]", tc.name, got, tc.min, tc.max)
		}
	}
	if x[program] == 0 {
		t.Error("CosineWithout changed its argument")
	}
}

func TestEmptyBuilder(t *testing.T) {
	var b Builder
	b.Add("user", "", 1)
	b.AddTokens("cmd", "  - ", 1)
	if b.Vector() != (Vec{}) {
		t.Error("empty values added features")
	}
}

func TestTokens(t *testing.T) {
	got := Tokens("torchrun --nproc_per_node=8 train.py --lr 3e-4 -x", 10)
	want := []string{"torchrun", "nproc_per_node", "train.py", "lr", "3e-4"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tokens = %q, want %q", got, want)
	}
	if n := len(Tokens("a1 b2 c3 d4 e5", 2)); n != 2 {
		t.Errorf("limit ignored: %d tokens", n)
	}
}

func BenchmarkCosine(b *testing.B) {
	x := build(map[string]string{"user": "alice", "name": "train"})
	y := build(map[string]string{"user": "alice", "name": "eval"})
	for b.Loop() {
		Cosine(&x, &y)
	}
}
