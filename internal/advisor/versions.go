package advisor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/schedmate/schedmate/internal/fingerprint"
	"github.com/schedmate/schedmate/internal/vector"
)

// VersionBucket caches extracted fingerprints by submission identity, with
// the content hashes that say whether they still hold.
const VersionBucket = "advisor_versions"

// maxCachedEntry bounds a cached fingerprint's encoded size.
const maxCachedEntry = 256 << 10

// versionEntry is one cached extraction.
type versionEntry struct {
	ScriptHash  string                   `json:"script_hash"`
	GitCommit   string                   `json:"git_commit"`
	Fingerprint *fingerprint.Fingerprint `json:"fingerprint"`
}

// SubmitKey identifies a submission for the version manager: the user, the
// working directory, the script as submitted (path and arguments) and the
// git branch. Zero when there is nothing to key on.
func SubmitKey(user, workDir, script string, args []string, branch string) uint64 {
	if user == "" && workDir == "" && script == "" {
		return 0
	}
	s := user + "\x00" + workDir + "\x00" + script + "\x00" + branch
	for _, a := range args {
		s += "\x00" + a
	}
	return vector.Hash64("submission", s)
}

// ResubmitKey identifies a job for the admission analyzer: the user, the
// working directory, the launch command and the git branch (the paper's
// resubmission match). Zero when the command is unknown.
func ResubmitKey(j *JobInfo) uint64 {
	if j.Command == "" {
		return 0
	}
	return vector.Hash64("resubmit", j.User+"\x00"+j.WorkDir+"\x00"+j.Command+"\x00"+j.GitBranch)
}

// scriptHash is the content hash of a script body.
func scriptHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:16])
}

// cachedFingerprint returns the cached extraction for a submission when the
// script's content, the git commit and every file it read are unchanged.
func cachedFingerprint(kv KV, key uint64, body []byte, commit string) (*fingerprint.Fingerprint, bool) {
	if key == 0 {
		return nil, false
	}
	raw, ok, err := kv.GetKV(VersionBucket, strconv.FormatUint(key, 16))
	if err != nil || !ok || len(raw) > maxCachedEntry {
		return nil, false
	}
	var e versionEntry
	if json.Unmarshal(raw, &e) != nil || e.Fingerprint == nil {
		return nil, false
	}
	if e.ScriptHash != scriptHash(body) || e.GitCommit != commit || e.Fingerprint.Changed() {
		return nil, false
	}
	return e.Fingerprint, true
}

// cacheFingerprint stores an extraction for later resubmissions.
func cacheFingerprint(kv KV, key uint64, body []byte, fp *fingerprint.Fingerprint) error {
	if key == 0 {
		return nil
	}
	raw, err := json.Marshal(versionEntry{ScriptHash: scriptHash(body), GitCommit: fp.GitCommit, Fingerprint: fp})
	if err != nil {
		return fmt.Errorf("encode fingerprint: %w", err)
	}
	if len(raw) > maxCachedEntry {
		return nil
	}
	return kv.BatchKV(VersionBucket, func(put func(k string, v []byte) error) error {
		return put(strconv.FormatUint(key, 16), raw)
	})
}
