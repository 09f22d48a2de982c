// Package fingerprint extracts, without running anything, what a batch job
// is: its #SBATCH options, launch command, entry script, git branch and
// commit, and workload metadata (model, dataset, batch size, steps or epochs,
// framework, sequence length) from arguments, referenced config files and the
// entry script. Every read is bounded, stays inside the job's working
// directory, skips secrets and honours the job user's file permissions.
package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Limits bound what one extraction reads.
type Limits struct {
	MaxFileBytes  int64 // largest file read (default 1 MiB)
	MaxFiles      int   // files read besides the script (default 12)
	MaxTotalBytes int64 // bytes read in all (default 4 MiB)
}

// DefaultLimits returns the limits used when Input.Limits is zero.
func DefaultLimits() Limits {
	return Limits{MaxFileBytes: 1 << 20, MaxFiles: 12, MaxTotalBytes: 4 << 20}
}

// Input is a job to fingerprint.
type Input struct {
	// Script is the batch script's path; ScriptBody, when not nil, is its
	// content (job_submit.lua passes the script text, not a path).
	Script     string
	ScriptBody []byte
	// Args are the arguments given to the script.
	Args []string
	// WorkDir is the job's working directory; relative paths resolve there
	// and no file outside it (after symlinks) is read.
	WorkDir string
	// Access, when set, limits reads to files the job's user could read.
	Access *Access
	Limits Limits
}

// Fingerprint is the static description of a job.
type Fingerprint struct {
	Options   map[string]string `json:"options,omitempty"`  // #SBATCH options by long name
	Launcher  string            `json:"launcher,omitempty"` // python, torchrun, deepspeed, accelerate, srun, ...
	Entry     string            `json:"entry,omitempty"`    // entry script or module
	Command   string            `json:"command,omitempty"`  // normalised launch command
	Args      []string          `json:"args,omitempty"`     // arguments of the entry
	WorkDir   string            `json:"work_dir,omitempty"`
	GitBranch string            `json:"git_branch,omitempty"`
	GitCommit string            `json:"git_commit,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"` // workload fields
	Files     []FileStamp       `json:"files,omitempty"`    // files read, for change detection
	Notes     []string          `json:"notes,omitempty"`    // what was skipped and why
	Hash      string            `json:"hash"`               // content hash of script, files and commit
}

// FileStamp identifies the version of one file read.
type FileStamp struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
}

// Text renders the fingerprint as one line of sorted key=value fields, the
// form stored with a job.
func (f *Fingerprint) Text() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("launcher", f.Launcher)
	add("entry", f.Entry)
	add("branch", f.GitBranch)
	keys := make([]string, 0, len(f.Metadata))
	for k := range f.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "launcher", "entry", "branch", "git_branch":
			continue // already written above
		}
		add(k, f.Metadata[k])
	}
	return strings.Join(parts, " ")
}

// Extract fingerprints a job. A missing, unreadable, binary or oversized
// script is an error; trouble with any other file is a note.
func Extract(in Input) (*Fingerprint, error) {
	if in.Limits == (Limits{}) {
		in.Limits = DefaultLimits()
	}
	r, err := newReader(in.WorkDir, in.Access, in.Limits)
	if err != nil {
		return nil, err
	}
	body := in.ScriptBody
	if body == nil {
		if in.Script == "" {
			return nil, fmt.Errorf("fingerprint: no script given")
		}
		body, err = r.readScript(in.Script)
		if err != nil {
			return nil, err
		}
	} else if err := checkText(body, in.Limits.MaxFileBytes); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	fp := &Fingerprint{WorkDir: r.root, Metadata: map[string]string{}}
	h := sha256.New()
	h.Write(body)

	script := parseScript(string(body))
	fp.Options = script.options
	launch := parseLaunch(script.launch, in.Args)
	fp.Launcher, fp.Entry, fp.Args = launch.launcher, launch.entry, launch.args
	fp.Command = launch.command
	if launch.framework != "" {
		fp.Metadata["framework"] = launch.framework
	}
	fromArgs(launch.args, fp.Metadata)
	for _, cfg := range launch.configs {
		data, ok := r.read(cfg, &fp.Notes)
		if !ok {
			continue
		}
		h.Write([]byte(cfg))
		h.Write(data)
		fromConfig(cfg, data, fp.Metadata, &fp.Notes)
	}
	if launch.entry != "" && strings.HasSuffix(launch.entry, ".py") {
		if data, ok := r.read(launch.entry, &fp.Notes); ok {
			h.Write([]byte(launch.entry))
			h.Write(data)
			fromPython(string(data), fp.Metadata)
		}
	}
	fp.GitBranch, fp.GitCommit = r.git(&fp.Notes)
	h.Write([]byte(fp.GitCommit))
	fp.Files = r.stamps
	if fp.Entry != "" {
		fp.Metadata["entry"] = fp.Entry
	}
	fp.Hash = hex.EncodeToString(h.Sum(nil))[:32]
	return fp, nil
}

// Changed reports whether any file the fingerprint read has changed size or
// modification time since, or is gone.
func (f *Fingerprint) Changed() bool {
	for _, s := range f.Files {
		fi, err := os.Stat(s.Path)
		if err != nil || fi.Size() != s.Size || fi.ModTime().UnixNano() != s.ModTime {
			return true
		}
	}
	return false
}
