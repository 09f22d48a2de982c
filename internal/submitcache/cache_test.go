package submitcache

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPutAndRead(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := &Cache{Path: filepath.Join(t.TempDir(), FileName), MaxEntries: 2, TTL: time.Hour, Now: func() time.Time { return now }}
	steps := []struct {
		key     string
		answers []string
		want    []string // keys after the put, oldest first
	}{
		{"0 10 5 /w a", []string{"admin_comment=schedmate: est=1m", "bad answer", "x=1\tinjected"}, []string{"0 10 5 /w a"}},
		{"0 10 6 /w b", nil, []string{"0 10 5 /w a", "0 10 6 /w b"}},
		{"0 10 5 /w a", []string{"time_min=3"}, []string{"0 10 6 /w b", "0 10 5 /w a"}},
		{"0 10 7 /w c", nil, []string{"0 10 5 /w a", "0 10 7 /w c"}},
	}
	for i, s := range steps {
		now = now.Add(time.Second)
		if err := c.Put(s.key, s.answers); err != nil {
			t.Fatalf("step %d: Put: %v", i, err)
		}
		got, err := Read(c.Path, now)
		if err != nil {
			t.Fatalf("step %d: Read: %v", i, err)
		}
		var keys []string
		for _, e := range got {
			keys = append(keys, e.Key)
		}
		if !slices.Equal(keys, s.want) {
			t.Errorf("step %d: keys %q, want %q", i, keys, s.want)
		}
	}
	got, _ := Read(c.Path, now)
	if !slices.Equal(got[0].Answers, []string{"time_min=3"}) {
		t.Errorf("answers %q, want the replaced entry's", got[0].Answers)
	}
	if late, _ := Read(c.Path, now.Add(2*time.Hour)); len(late) != 0 {
		t.Errorf("expired entries read: %+v", late)
	}
	if err := c.Forget("0 10 5 /w a"); err != nil {
		t.Fatal(err)
	}
	if got, _ := Read(c.Path, now); len(got) != 1 {
		t.Errorf("after Forget: %+v", got)
	}
}

func TestPutRejectsBadKeys(t *testing.T) {
	c := New(filepath.Join(t.TempDir(), FileName))
	for _, key := range []string{"", "a\tb", "a\nb", strings.Repeat("k", MaxLineBytes)} {
		if err := c.Put(key, nil); err == nil {
			t.Errorf("Put(%q) accepted", key)
		}
	}
}

func TestReadBadFiles(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name    string
		content []byte
		wantErr bool
	}{
		{"missing", nil, false},
		{"empty", []byte{}, false},
		{"no header", []byte("k\t9999999999\t1\tadmin_comment=x\n"), false},
		{"binary", []byte("\x00\xff\xfe#schedmate"), false},
		{"damaged lines", []byte(header + " 1\nk\tsoon\t1\n\t1\t1\nok\t9999999999\t1\tBAD=x\ttime_min=2\n"), false},
		{"huge", make([]byte, MaxFileBytes+1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if tt.content != nil {
				if err := os.WriteFile(path, tt.content, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Read(path, now)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Read error %v, want error %v", err, tt.wantErr)
			}
			for _, e := range got {
				if e.Key != "ok" || !slices.Equal(e.Answers, []string{"time_min=2"}) {
					t.Errorf("unexpected entry %+v", e)
				}
			}
		})
	}
	// A damaged file is replaced by the next Put.
	c := New(filepath.Join(dir, "huge"))
	if err := c.Put("k", []string{"nice=1"}); err != nil {
		t.Fatalf("Put over a damaged file: %v", err)
	}
	if got, err := Read(c.Path, time.Now()); err != nil || len(got) != 1 {
		t.Errorf("after Put: %+v, %v", got, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(header + " 1\nk\t9999999999\t1\tadmin_comment=x\n"))
	f.Add([]byte("garbage\x00\n\t\t\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, e := range parse(data, time.Unix(0, 0)) {
			if !ValidKey(e.Key) {
				t.Errorf("invalid key %q parsed", e.Key)
			}
			for _, a := range e.Answers {
				if !validAnswer(a) {
					t.Errorf("invalid answer %q parsed", a)
				}
			}
		}
	})
}
