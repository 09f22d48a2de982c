package fingerprint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree creates files (path -> content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestUnsafeReferencesAreSkipped(t *testing.T) {
	outside := writeTree(t, map[string]string{"leak.yaml": "model: stolen\n"})
	dir := writeTree(t, map[string]string{
		"job.sh":       "#!/bin/bash\npython train.py --config link.yaml --config2 .env --cfg big.yaml --deepspeed bin.json --conf missing.yaml --hparams id_rsa.json\n",
		"train.py":     "import torch\n",
		".env":         "HF_TOKEN=x\n",
		"id_rsa.json":  "{}\n",
		"bin.json":     "\x00\x01binary",
		"configs/a.py": "x",
	})
	if err := os.Symlink(filepath.Join(outside, "leak.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(dir, "big.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(2 << 30); err != nil { // sparse 2 GiB file
		t.Fatal(err)
	}
	big.Close()

	fp, err := Extract(Input{Script: "job.sh", WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if fp.Metadata["model"] != "" {
		t.Errorf("read through a symlink out of the working directory: %v", fp.Metadata)
	}
	notes := strings.Join(fp.Notes, "\n")
	for _, want := range []string{"link.yaml: skipped: outside", "big.yaml: skipped: 2147483648 bytes", "bin.json: binary", "missing.yaml:", "id_rsa.json: skipped: looks like a secret"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	for _, f := range fp.Files {
		if strings.HasSuffix(f.Path, ".env") || strings.Contains(f.Path, "leak") {
			t.Errorf("read %s", f.Path)
		}
	}
}

func TestBadScripts(t *testing.T) {
	dir := writeTree(t, map[string]string{"empty.sh": "", "bin.sh": "\x7fELF\x00\x00"})
	big := filepath.Join(dir, "big.sh")
	if f, err := os.Create(big); err == nil {
		f.Truncate(2 << 30)
		f.Close()
	}
	for _, script := range []string{"empty.sh", "bin.sh", "big.sh", "missing.sh"} {
		if _, err := Extract(Input{Script: script, WorkDir: dir}); err == nil {
			t.Errorf("%s: no error", script)
		}
	}
	if _, err := Extract(Input{WorkDir: dir}); err == nil {
		t.Error("no script: no error")
	}
	if _, err := Extract(Input{ScriptBody: []byte("\x00"), WorkDir: dir}); err == nil {
		t.Error("binary body: no error")
	}
}

func TestAccessHonoursJobUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("permission checks on behalf of another user need root")
	}
	dir := writeTree(t, map[string]string{
		"job.sh":    "python train.py --config restricted.yaml --cfg open.yaml\n",
		"open.yaml": "epochs: 7\n",
	})
	if err := os.WriteFile(filepath.Join(dir, "restricted.yaml"), []byte("model: hidden\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} { // TempDir makes them 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fp, err := Extract(Input{Script: filepath.Join(dir, "job.sh"), WorkDir: dir, Access: &Access{UID: 4242, GIDs: []int{4242}}})
	if err != nil {
		t.Fatal(err)
	}
	if fp.Metadata["model"] != "" || fp.Metadata["epochs"] != "7" {
		t.Errorf("metadata = %v: want only what uid 4242 may read", fp.Metadata)
	}
	if !strings.Contains(strings.Join(fp.Notes, "\n"), "cannot read") {
		t.Errorf("notes = %q", fp.Notes)
	}
}

func TestGitWorktreeAndDetached(t *testing.T) {
	common := writeTree(t, map[string]string{
		"repo/.git/HEAD":                   "ref: refs/heads/main\n",
		"repo/.git/refs/heads/main":        "1111111111111111111111111111111111111111\n",
		"repo/.git/worktrees/wt/HEAD":      "ref: refs/heads/exp\n",
		"repo/.git/worktrees/wt/commondir": "../..\n",
		"repo/.git/packed-refs":            "2222222222222222222222222222222222222222 refs/heads/exp\n",
		"detached/.git/HEAD":               "3333333333333333333333333333333333333333\n",
	})
	wt := filepath.Join(common, "wt")
	if err := os.MkdirAll(filepath.Join(wt, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(common, "repo/.git/worktrees/wt")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, branch, commit string }{
		{filepath.Join(common, "repo"), "main", "1111111111111111111111111111111111111111"},
		{filepath.Join(wt, "sub"), "exp", "2222222222222222222222222222222222222222"},
		{filepath.Join(common, "detached"), "", "3333333333333333333333333333333333333333"},
	} {
		b, c := GitHead(tc.dir)
		if b != tc.branch || c != tc.commit {
			t.Errorf("%s: got %q %q, want %q %q", tc.dir, b, c, tc.branch, tc.commit)
		}
	}
}
