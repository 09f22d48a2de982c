package hostlist

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "n1", want: []string{"n1"}},
		{in: "gpu[01-04,07],cpu1", want: []string{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07", "cpu1"}},
		{in: "n[1-2]", want: []string{"n1", "n2"}},
		{in: "r[1-2]n[1-2]", want: []string{"r1n1", "r1n2", "r2n1", "r2n2"}},
		{in: "a[9-11]", want: []string{"a9", "a10", "a11"}},
		{in: "n[3-1]", wantErr: true},
		{in: "n[1-", wantErr: true},
		{in: "n]1", wantErr: true},
		{in: "n[a-b]", wantErr: true},
		{in: "n[0-999999999]", wantErr: true},
	}
	for _, tt := range tests {
		got, err := Expand(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("Expand(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCompress(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"n1"}, "n1"},
		{[]string{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07", "cpu1"}, "gpu[01-04,07],cpu1"},
		{[]string{"n3", "n1", "n2", "n2"}, "n[1-3]"},
		{[]string{"a9", "a10", "a11"}, "a[9-11]"},
		{[]string{"login", "n1", "n3"}, "login,n[1,3]"},
	}
	for _, tt := range tests {
		if got := Compress(tt.in); got != tt.want {
			t.Errorf("Compress(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzHostlist(f *testing.F) {
	for _, s := range []string{"gpu[01-04,07],cpu1", "n[1-8]", "r[1-2]n[01-10]", "a,b,c", "x[", "[1-2]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		hosts, err := Expand(list)
		if err != nil {
			return
		}
		again, err := Expand(Compress(hosts))
		if err != nil {
			t.Fatalf("Expand(Compress(%q)): %v", hosts, err)
		}
		if !sameSet(hosts, again) {
			t.Fatalf("round trip of %q: %q -> %q", list, hosts, again)
		}
	})
}

func sameSet(a, b []string) bool {
	m := map[string]bool{}
	for _, s := range a {
		if strings.ContainsAny(s, "[],") {
			return true // names with syntax characters cannot round-trip
		}
		m[s] = true
	}
	n := map[string]bool{}
	for _, s := range b {
		n[s] = true
	}
	return reflect.DeepEqual(m, n)
}
