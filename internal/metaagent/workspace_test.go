package metaagent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree creates files under dir; content "" writes a small default.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if content == "" {
			content = "x = 1\n"
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newWorkspace(t *testing.T) (*Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"train.py":                     "",
		"run.sh":                       "",
		"configs/model.yaml":           "",
		"requirements.txt":             "",
		"notes.txt":                    "",
		".git/config":                  "",
		".venv/lib/x.py":               "",
		"myenv/pyvenv.cfg":             "",
		"myenv/lib/site.py":            "",
		"data/train.json":              "",
		"logs/slurm-1.out":             "",
		"checkpoints/step100/cfg.py":   "",
		"wandb/run/config.yaml":        "",
		"__pycache__/train.cpython.py": "",
		".env":                         "WANDB_API_KEY=abc",
		"secrets.yaml":                 "",
		"deploy/server.pem":            "",
		"model.safetensors":            "",
		"big.json":                     strings.Repeat("1", 70<<10),
		"binary.py":                    "a\x00b",
	})
	ws, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ws, dir
}

func TestWorkspaceFiles(t *testing.T) {
	ws, _ := newWorkspace(t)
	files, truncated, err := ws.Files()
	if err != nil || truncated {
		t.Fatalf("Files: %v truncated=%v", err, truncated)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	want := "binary.py configs/model.yaml requirements.txt run.sh train.py"
	if strings.Join(got, " ") != want {
		t.Errorf("files = %q\nwant   %q", strings.Join(got, " "), want)
	}
}

func TestWorkspaceFilesBounded(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 30 {
		files[filepath.Join("pkg", strings.Repeat("a", i+1)+".py")] = ""
	}
	writeTree(t, dir, files)
	ws, _ := NewWorkspace(dir)
	ws.maxEntries = 10
	got, truncated, err := ws.Files()
	if err != nil || !truncated || len(got) != 10 {
		t.Fatalf("got %d files, truncated=%v, err=%v", len(got), truncated, err)
	}
	tree, _ := ws.Tree()
	if !strings.Contains(tree, "listing stopped at 10 files") {
		t.Errorf("tree does not say it was cut:\n%s", tree)
	}
}

func TestWorkspaceRead(t *testing.T) {
	ws, dir := newWorkspace(t)
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"stolen.py": "secret code"})
	if err := os.Symlink(filepath.Join(outside, "stolen.py"), filepath.Join(dir, "link.py")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{
		"launch.sh": "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789\npython train.py --bs 32\n",
		"long.py":   strings.Repeat("é", DefaultMaxRead),
	})
	tests := []struct {
		path    string
		want    string
		wantErr bool
		cut     bool
		notIn   string
	}{
		{path: "train.py", want: "x = 1\n"},
		{path: "./configs/../train.py", want: "x = 1\n"},
		{path: "launch.sh", want: "python train.py --bs 32", notIn: "hf_abcdefghij"},
		{path: "long.py", cut: true},
		{path: "../etc/passwd", wantErr: true},
		{path: "/etc/passwd", wantErr: true},
		{path: "link.py", wantErr: true},
		{path: ".env", wantErr: true},
		{path: "secrets.yaml", wantErr: true},
		{path: "deploy/server.pem", wantErr: true},
		{path: "logs/slurm-1.out", wantErr: true},
		{path: "data/train.json", wantErr: true},
		{path: ".git/config", wantErr: true},
		{path: "model.safetensors", wantErr: true},
		{path: "binary.py", wantErr: true},
		{path: "missing.py", wantErr: true},
		{path: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, cut, err := ws.Read(tt.path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Read(%q) err = %v", tt.path, err)
			}
			if tt.wantErr {
				return
			}
			if !strings.Contains(got, tt.want) || cut != tt.cut || len(got) > DefaultMaxRead {
				t.Errorf("Read(%q) = %d bytes cut=%v", tt.path, len(got), cut)
			}
			if tt.notIn != "" && strings.Contains(got, tt.notIn) {
				t.Errorf("Read(%q) leaked %q", tt.path, tt.notIn)
			}
		})
	}
	if _, _, err := ws.Read("link.py"); !errors.Is(err, ErrNotReadable) {
		t.Errorf("symlink out: err = %v, want ErrNotReadable", err)
	}
}

func TestNewWorkspaceErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	for _, p := range []string{filepath.Join(dir, "missing"), file} {
		if _, err := NewWorkspace(p); err == nil {
			t.Errorf("NewWorkspace(%s) succeeded", p)
		}
	}
}
