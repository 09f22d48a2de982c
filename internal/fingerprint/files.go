package fingerprint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Access describes the job's user, whose read permission every file read
// must have (checked from mode bits when schedmate runs as root).
type Access struct {
	UID  int
	GIDs []int
}

// canRead reports whether the user may read the file and search every
// directory above it.
func (a *Access) canRead(path string) bool {
	if a == nil || a.UID == 0 {
		return true
	}
	fi, err := os.Stat(path)
	if err != nil || !a.allowed(fi, 4) {
		return false
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		di, err := os.Stat(dir)
		if err != nil || !a.allowed(di, 1) {
			return false
		}
		if dir == filepath.Dir(dir) {
			return true
		}
	}
}

// allowed checks one permission bit (4 read, 1 execute/search) for the user.
func (a *Access) allowed(fi fs.FileInfo, bit fs.FileMode) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	mode := fi.Mode().Perm()
	switch {
	case int(st.Uid) == a.UID:
		return mode&(bit<<6) != 0
	case slices.Contains(a.GIDs, int(st.Gid)):
		return mode&(bit<<3) != 0
	default:
		return mode&bit != 0
	}
}

// reader reads the files of one job within its limits.
type reader struct {
	root   string // working directory, symlinks resolved
	access *Access
	limits Limits
	files  int
	total  int64
	stamps []FileStamp
}

func newReader(workDir string, access *Access, limits Limits) (*reader, error) {
	if workDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("fingerprint: working directory: %w", err)
		}
		workDir = wd
	}
	abs, err := filepath.Abs(workDir)
	if err != nil {
		return nil, fmt.Errorf("fingerprint: working directory %s: %w", workDir, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		root = abs // a missing directory still names the job
	}
	return &reader{root: root, access: access, limits: limits}, nil
}

// errSkip marks files that are skipped by policy rather than by failure.
var errSkip = errors.New("skipped")

// readScript reads the batch script itself, which may live outside the
// working directory; a problem with it is an error.
func (r *reader) readScript(path string) ([]byte, error) {
	p := r.abs(path)
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, fmt.Errorf("read script %s: %w", path, err)
	}
	data, err := r.load(resolved)
	if err != nil {
		return nil, fmt.Errorf("read script %s: %w", path, err)
	}
	if err := checkText(data, r.limits.MaxFileBytes); err != nil {
		return nil, fmt.Errorf("read script %s: %w", path, err)
	}
	return data, nil
}

// read reads a file the job refers to, relative to the working directory.
// Any problem becomes a note and ok false.
func (r *reader) read(path string, notes *[]string) (data []byte, ok bool) {
	data, err := r.readReferenced(path)
	if err != nil {
		*notes = append(*notes, fmt.Sprintf("%s: %v", path, err))
		return nil, false
	}
	return data, true
}

func (r *reader) readReferenced(path string) ([]byte, error) {
	if isSecret(path) {
		return nil, fmt.Errorf("%w: looks like a secret", errSkip)
	}
	if r.files >= r.limits.MaxFiles {
		return nil, fmt.Errorf("%w: more than %d files", errSkip, r.limits.MaxFiles)
	}
	resolved, err := filepath.EvalSymlinks(r.abs(path))
	if err != nil {
		return nil, err
	}
	if !inside(r.root, resolved) {
		return nil, fmt.Errorf("%w: outside the working directory", errSkip)
	}
	if isSecret(resolved) {
		return nil, fmt.Errorf("%w: looks like a secret", errSkip)
	}
	data, err := r.load(resolved)
	if err != nil {
		return nil, err
	}
	if err := checkText(data, r.limits.MaxFileBytes); err != nil {
		return nil, err
	}
	return data, nil
}

// load reads a regular file within the size and total limits and records
// its stamp.
func (r *reader) load(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", errSkip)
	}
	if fi.Size() > r.limits.MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the %d byte limit", errSkip, fi.Size(), r.limits.MaxFileBytes)
	}
	if r.total+fi.Size() > r.limits.MaxTotalBytes {
		return nil, fmt.Errorf("%w: read budget of %d bytes spent", errSkip, r.limits.MaxTotalBytes)
	}
	if !r.access.canRead(path) {
		return nil, fmt.Errorf("%w: the job's user cannot read it", errSkip)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, r.limits.MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	r.files++
	r.total += int64(len(data))
	r.stamps = append(r.stamps, FileStamp{Path: path, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()})
	return data, nil
}

// abs resolves a path against the working directory.
func (r *reader) abs(path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(r.root, path)
}

// inside reports whether path lies within dir.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// checkText rejects empty, oversized and binary content.
func checkText(data []byte, limit int64) error {
	switch {
	case len(data) == 0:
		return errors.New("empty file")
	case int64(len(data)) > limit:
		return fmt.Errorf("%d bytes, over the %d byte limit", len(data), limit)
	case bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0:
		return errors.New("binary file, not text")
	}
	return nil
}

// secretNames are base names never read.
var secretNames = []string{
	".env", ".netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc",
	"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "shadow", "gshadow", "kubeconfig",
}

// secretParts are substrings of base names never read.
var secretParts = []string{"secret", "token", "credential", "password", "passwd", "apikey", "api_key", "private"}

// secretExts are extensions never read.
var secretExts = []string{".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx", ".gpg", ".asc"}

// isSecret reports whether a file name looks like it holds credentials.
func isSecret(path string) bool {
	base := strings.ToLower(filepath.Base(path))
	if slices.Contains(secretNames, base) || strings.HasPrefix(base, ".env.") || strings.HasPrefix(base, "id_rsa") {
		return true
	}
	if slices.Contains(secretExts, filepath.Ext(base)) {
		return true
	}
	for _, p := range secretParts {
		if strings.Contains(base, p) {
			return true
		}
	}
	return strings.Contains(filepath.ToSlash(path), "/.ssh/") || strings.Contains(filepath.ToSlash(path), "/.aws/")
}

// ReadScript reads a batch script within the limits, refusing binary,
// empty and oversized files and, when access is set, files its user could
// not read.
func ReadScript(path, workDir string, access *Access, limits Limits) ([]byte, error) {
	if limits == (Limits{}) {
		limits = DefaultLimits()
	}
	r, err := newReader(workDir, access, limits)
	if err != nil {
		return nil, err
	}
	return r.readScript(path)
}
