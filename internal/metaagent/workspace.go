package metaagent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/schedmate/schedmate/internal/llm"
)

// Workspace gives the agent a bounded, read-only view of a job's working
// directory: code and configuration files only, never data, logs,
// checkpoints, caches, version-control or virtual-environment trees, never
// a path outside the directory, never a file that holds credentials.
type Workspace struct {
	root       string
	maxEntries int
	maxRead    int
	maxDepth   int
}

// Default workspace bounds.
const (
	DefaultMaxEntries = 200
	DefaultMaxRead    = 16 << 10
	DefaultMaxDepth   = 6
)

// NewWorkspace opens dir, which must be an existing directory.
func NewWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s: not a directory", dir)
	}
	return &Workspace{root: root, maxEntries: DefaultMaxEntries, maxRead: DefaultMaxRead, maxDepth: DefaultMaxDepth}, nil
}

// skippedDirs are directory names that hold data, outputs, caches or
// environments rather than the job's code.
var skippedDirs = map[string]bool{
	".git": true, ".hg": true, ".svn": true, "__pycache__": true, ".venv": true, "venv": true, "env": true,
	".env": true, "conda": true, ".conda": true, "site-packages": true, "node_modules": true,
	".mypy_cache": true, ".pytest_cache": true, ".ruff_cache": true, ".ipynb_checkpoints": true,
	".cache": true, "cache": true, "__cache__": true, "wandb": true, "mlruns": true, "runs": true,
	"logs": true, "log": true, "outputs": true, "output": true, "out": true, "results": true,
	"checkpoints": true, "checkpoint": true, "ckpt": true, "ckpts": true, "lightning_logs": true,
	"tb_logs": true, "tensorboard": true, "data": true, "datasets": true, "dataset": true,
	"build": true, "dist": true, ".idea": true, ".vscode": true, ".tox": true, ".nox": true,
}

// codeExts are the file types the agent may see.
var codeExts = map[string]bool{
	".py": true, ".sh": true, ".bash": true, ".zsh": true, ".slurm": true, ".sbatch": true, ".job": true,
	".yaml": true, ".yml": true, ".json": true, ".toml": true, ".cfg": true, ".ini": true, ".conf": true,
	".gin": true, ".jsonnet": true, ".md": true, ".rst": true, ".txt": true,
}

// codeNames are extension-less files the agent may see.
var codeNames = map[string]bool{"makefile": true, "dockerfile": true, "justfile": true, "procfile": true}

// maxCodeFileBytes: bigger files are data even with a code extension.
const maxCodeFileBytes = 1 << 20

// isCodeFile reports whether a file name and size look like code or configuration.
func isCodeFile(name string, size int64) bool {
	if size > maxCodeFileBytes || isSecretFile(name) {
		return false
	}
	lower := strings.ToLower(name)
	if codeNames[lower] {
		return true
	}
	ext := filepath.Ext(lower)
	if ext == ".txt" {
		return strings.HasPrefix(lower, "requirements") || strings.HasPrefix(lower, "readme")
	}
	if ext == ".json" && size > 64<<10 {
		return false
	}
	return codeExts[ext]
}

// isSecretFile reports whether a file name says it holds credentials.
func isSecretFile(name string) bool {
	lower := strings.ToLower(name)
	switch {
	case lower == ".env" || strings.HasPrefix(lower, ".env.") || lower == ".netrc" || lower == ".pgpass":
		return true
	case strings.HasPrefix(lower, "id_rsa") || strings.HasPrefix(lower, "id_ed25519") || strings.HasPrefix(lower, "id_ecdsa"):
		return true
	case strings.Contains(lower, "secret") || strings.Contains(lower, "credential") || strings.Contains(lower, "token"):
		return true
	}
	switch filepath.Ext(lower) {
	case ".pem", ".key", ".p12", ".pfx", ".keystore", ".jks":
		return true
	}
	return false
}

// File is one entry of the workspace tree.
type File struct {
	// Path is relative to the workspace root, with forward slashes.
	Path string
	// Size is in bytes.
	Size int64
}

// Files lists the code and configuration files under the root, sorted,
// at most the entry bound; truncated is true when more existed.
func (w *Workspace) Files() (files []File, truncated bool, err error) {
	err = filepath.WalkDir(w.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == w.root {
				return err
			}
			return nil // unreadable subtrees are skipped
		}
		rel, _ := filepath.Rel(w.root, path)
		if d.IsDir() {
			if path == w.root {
				return nil
			}
			if skippedDirs[strings.ToLower(d.Name())] || strings.HasSuffix(d.Name(), ".egg-info") ||
				strings.Count(rel, string(filepath.Separator)) >= w.maxDepth || isVirtualEnv(path) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symlinks and devices are not listed
		}
		info, err := d.Info()
		if err != nil || !isCodeFile(d.Name(), info.Size()) {
			return nil
		}
		if len(files) >= w.maxEntries {
			truncated = true
			return filepath.SkipAll
		}
		files = append(files, File{Path: filepath.ToSlash(rel), Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", w.root, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, truncated, nil
}

func isVirtualEnv(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "pyvenv.cfg"))
	return err == nil
}

// Tree renders Files as the file_tree tool's answer.
func (w *Workspace) Tree() (string, error) {
	files, truncated, err := w.Files()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%s (%d bytes)\n", f.Path, f.Size)
	}
	if len(files) == 0 {
		b.WriteString("(no code or configuration files)\n")
	}
	if truncated {
		fmt.Fprintf(&b, "(listing stopped at %d files)\n", w.maxEntries)
	}
	return b.String(), nil
}

// ErrNotReadable is returned for paths the file_read tool refuses.
var ErrNotReadable = errors.New("not readable")

// Read returns a code or configuration file under the root, redacted and
// bounded; truncated is true when the file was longer than the bound.
func (w *Workspace) Read(rel string) (text string, truncated bool, err error) {
	path, err := w.resolve(rel)
	if err != nil {
		return "", false, err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", rel, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", rel, err)
	}
	if !info.Mode().IsRegular() || !isCodeFile(info.Name(), info.Size()) {
		return "", false, fmt.Errorf("read %s: %w: only code and configuration files", rel, ErrNotReadable)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(w.maxRead)+1))
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", rel, err)
	}
	if len(b) > w.maxRead {
		b, truncated = trimPartialRune(b[:w.maxRead]), true
	}
	if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		return "", false, fmt.Errorf("read %s: %w: binary file", rel, ErrNotReadable)
	}
	return llm.Redact(string(b)), truncated, nil
}

// resolve maps a relative path to a file inside the root, refusing escapes
// through "..", absolute paths and symlinks.
func (w *Workspace) resolve(rel string) (string, error) {
	if rel == "" || filepath.IsAbs(rel) {
		return "", fmt.Errorf("read %q: %w: give a path relative to the working directory", rel, ErrNotReadable)
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("read %q: %w: outside the working directory", rel, ErrNotReadable)
	}
	for _, part := range strings.Split(clean, string(filepath.Separator)) {
		if skippedDirs[strings.ToLower(part)] {
			return "", fmt.Errorf("read %q: %w: %s holds no code", rel, ErrNotReadable, part)
		}
	}
	real, err := filepath.EvalSymlinks(filepath.Join(w.root, clean))
	if err != nil {
		return "", fmt.Errorf("read %q: %w", rel, err)
	}
	if real != w.root && !strings.HasPrefix(real, w.root+string(filepath.Separator)) {
		return "", fmt.Errorf("read %q: %w: links outside the working directory", rel, ErrNotReadable)
	}
	return real, nil
}

// trimPartialRune drops an incomplete UTF-8 sequence cut by the read bound.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= 3 && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}
