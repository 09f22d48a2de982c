package fingerprint

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxGitFile bounds every git metadata file read (HEAD, refs, packed-refs).
const maxGitFile = 1 << 20

// maxGitDepth bounds how far up from the working directory a repository is
// looked for.
const maxGitDepth = 16

// git returns the branch and commit of the repository holding the working
// directory, reading .git directly (worktrees' .git files included).
func (r *reader) git(notes *[]string) (branch, commit string) {
	gitDir := findGitDir(r.root)
	if gitDir == "" {
		return "", ""
	}
	head, ok := readSmall(filepath.Join(gitDir, "HEAD"))
	if !ok {
		*notes = append(*notes, "git: unreadable HEAD")
		return "", ""
	}
	head = strings.TrimSpace(head)
	ref, isRef := strings.CutPrefix(head, "ref: ")
	if !isRef {
		if isHash(head) {
			return "", head
		}
		return "", ""
	}
	ref = strings.TrimSpace(ref)
	branch = strings.TrimPrefix(ref, "refs/heads/")
	common := gitDir
	if c, ok := readSmall(filepath.Join(gitDir, "commondir")); ok {
		c = strings.TrimSpace(c)
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	if strings.Contains(ref, "..") {
		return branch, ""
	}
	for _, dir := range []string{gitDir, common} {
		if v, ok := readSmall(filepath.Join(dir, filepath.FromSlash(ref))); ok && isHash(strings.TrimSpace(v)) {
			return branch, strings.TrimSpace(v)
		}
	}
	return branch, packedRef(filepath.Join(common, "packed-refs"), ref)
}

// findGitDir walks up from dir to the nearest .git directory or gitdir file.
func findGitDir(dir string) string {
	for range maxGitDepth {
		p := filepath.Join(dir, ".git")
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				return p
			}
			if s, ok := readSmall(p); ok {
				if target, found := strings.CutPrefix(strings.TrimSpace(s), "gitdir:"); found {
					target = strings.TrimSpace(target)
					if !filepath.IsAbs(target) {
						target = filepath.Join(dir, target)
					}
					return filepath.Clean(target)
				}
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
	return ""
}

// packedRef looks a ref up in a packed-refs file.
func packedRef(path, ref string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<20))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		hash, name, ok := bytes.Cut(line, []byte(" "))
		if ok && string(name) == ref && isHash(string(hash)) {
			return string(hash)
		}
	}
	return ""
}

// readSmall reads a small regular file.
func readSmall(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxGitFile {
		return "", false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return string(data), true
}

// isHash reports whether s is a hex object name (SHA-1 or SHA-256).
func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// GitHead returns the branch and commit of the repository holding dir,
// reading .git directly; both are empty outside a repository.
func GitHead(dir string) (branch, commit string) {
	r, err := newReader(dir, nil, DefaultLimits())
	if err != nil {
		return "", ""
	}
	var notes []string
	return r.git(&notes)
}
