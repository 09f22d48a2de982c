package submitcache

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestParseHit(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    Hit
		wantErr bool
	}{
		{
			name: "sbatch with argv",
			line: "v1\t1700000000\t7\t0 10 5 /w a\t1000\talice\ttrain%20run\t/home/alice\tgpu\t120\tgres:gpu:2\t1\ttrain.sh\t--lr%091e-3\n",
			want: Hit{
				Time: time.Unix(1700000000, 7), Key: "0 10 5 /w a", UID: "1000", User: "alice", Name: "train run",
				WorkDir: "/home/alice", Partition: "gpu", TimeLimit: "120", Gres: "gres:gpu:2", Nodes: "1",
				Argv: []string{"train.sh", "--lr\t1e-3"},
			},
		},
		{name: "wrap job without argv", line: "v1\t1700000000\t0\tk\t0\troot\tn\t/tmp\t\t\t\t", want: Hit{Time: time.Unix(1700000000, 0), Key: "k", UID: "0", User: "root", Name: "n", WorkDir: "/tmp"}},
		{name: "other version", line: "v2\t1700000000\t0\tk\t0\troot\tn\t/tmp\t\t\t\t", wantErr: true},
		{name: "short", line: "v1\t1700000000\t0\tk", wantErr: true},
		{name: "bad time", line: "v1\tsoon\t0\tk\t0\troot\tn\t/tmp\t\t\t\t", wantErr: true},
		{name: "bad escape", line: "v1\t1700000000\t0\tk\t0\troot\tn%zz\t/tmp\t\t\t\t", wantErr: true},
		{name: "nobody", line: "v1\t1700000000\t0\tk\t\t\tn\t/tmp\t\t\t\t", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHit(tt.line)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseHit error %v, want error %v", err, tt.wantErr)
			}
			if err == nil && (!got.Time.Equal(tt.want.Time) || got.Key != tt.want.Key || got.Name != tt.want.Name ||
				got.UID != tt.want.UID || got.WorkDir != tt.want.WorkDir || got.Gres != tt.want.Gres || !slices.Equal(got.Argv, tt.want.Argv)) {
				t.Errorf("ParseHit = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDrainHits(t *testing.T) {
	path := HitsPath(filepath.Join(t.TempDir(), FileName))
	line := "v1\t1700000000\t1\tk\t0\troot\tn\t/tmp\t\t\t\t\n"
	content := line + "garbage\n" + line + line + "v1\t1700000000\t2\tk" // last line unterminated
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	// The first apply fails: the taken log stays for the next drain.
	boom := errors.New("store gone")
	if _, err := DrainHits(path, 2, func([]Hit) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("DrainHits error %v, want %v", err, boom)
	}
	var got int
	res, err := DrainHits(path, 2, func(h []Hit) error { got += len(h); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got != 3 || res.Applied != 3 || res.Bad != 1 {
		t.Errorf("applied %d, result %+v; want 3 applied, 1 bad", got, res)
	}
	left, _ := filepath.Glob(path + "*")
	if len(left) != 0 {
		t.Errorf("logs left after drain: %v", left)
	}
	if res, err := DrainHits(path, 2, func([]Hit) error { return nil }); err != nil || res.Applied != 0 {
		t.Errorf("drain of nothing = %+v, %v", res, err)
	}
}

func FuzzParseHit(f *testing.F) {
	f.Add("v1\t1700000000\t7\tk\t1000\talice\tn\t/w\tgpu\t120\tgres:gpu:2\t1\ttrain.sh")
	f.Add("v1\t\t\t\t\t\t\t\t\t\t\t%")
	f.Fuzz(func(t *testing.T, line string) {
		h, err := ParseHit(line)
		if err == nil && (!ValidKey(h.Key) || (h.UID == "" && h.User == "")) {
			t.Errorf("ParseHit accepted %q as %+v", line, h)
		}
	})
}
