package nodehealth

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
)

// A compute node running `schedmate health check` as Slurm's
// HealthCheckProgram usually cannot open the controller's database: it is
// on another host, or held by the controller. The check then records into
// the health spool instead (the directory that also carries per-job GPU
// figures), and the controller applies the records with IngestSpool:
// evidence as is, audit entries in the order they were written, each
// completed by its result. An audit entry still reaches the spool before
// the node is drained or resumed.

// Spool record kinds written by SpoolRecorder.
const (
	SpoolKindEvidence    = "node-evidence"
	SpoolKindAudit       = "node-audit"
	SpoolKindAuditResult = "node-audit-result"
)

// auditTokenBucket maps spooled audit tokens to the store's sequence
// numbers, so that a result finds its entry even in a later ingest.
const auditTokenBucket = "health.spool-audit"

// spooledAudit is an audit entry written before acting.
type spooledAudit struct {
	Token string           `json:"token"`
	Entry store.AuditEntry `json:"entry"`
}

// spooledAuditResult completes the spooled audit entry Token.
type spooledAuditResult struct {
	Token  string `json:"token"`
	Result string `json:"result"`
	Err    string `json:"error,omitempty"`
}

// SpoolRecorder is a Recorder that writes into a spool for the controller
// to ingest.
type SpoolRecorder struct {
	spool  *spool.Spool
	origin string

	mu     sync.Mutex
	tokens map[uint64]string
}

// NewSpoolRecorder returns a recorder writing into sp; origin (the node
// name) makes its audit tokens unique across nodes.
func NewSpoolRecorder(sp *spool.Spool, origin string) *SpoolRecorder {
	return &SpoolRecorder{spool: sp, origin: origin, tokens: map[uint64]string{}}
}

// AddEvidence implements Recorder.
func (r *SpoolRecorder) AddEvidence(e store.Evidence) error {
	if err := r.spool.Write(SpoolKindEvidence, e); err != nil {
		return fmt.Errorf("spool evidence for %s: %w", e.Node, err)
	}
	return nil
}

// Audit implements Recorder: the entry is on disk when it returns. The
// sequence number only pairs the entry with its FinishAudit.
func (r *SpoolRecorder) Audit(e store.AuditEntry) (uint64, error) {
	r.mu.Lock()
	seq := uint64(len(r.tokens) + 1)
	token := r.origin + "." + strconv.Itoa(os.Getpid()) + "." + strconv.FormatInt(time.Now().UnixNano(), 36) + "." + strconv.FormatUint(seq, 10)
	r.tokens[seq] = token
	r.mu.Unlock()
	if err := r.spool.Write(SpoolKindAudit, spooledAudit{Token: token, Entry: e}); err != nil {
		return 0, fmt.Errorf("spool audit %s %s: %w", e.Action, e.Target, err)
	}
	return seq, nil
}

// FinishAudit implements Recorder.
func (r *SpoolRecorder) FinishAudit(seq uint64, result string, actErr error) error {
	r.mu.Lock()
	token, ok := r.tokens[seq]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("finish audit %d: %w", seq, store.ErrNotFound)
	}
	rec := spooledAuditResult{Token: token, Result: result}
	if actErr != nil {
		rec.Err = actErr.Error()
	}
	if err := r.spool.Write(SpoolKindAuditResult, rec); err != nil {
		return fmt.Errorf("spool audit result %s: %w", token, err)
	}
	return nil
}

// applyNodeRecord applies one record written by SpoolRecorder; ok is false
// for records of other kinds.
func applyNodeRecord(st SpoolStore, r spool.Record) (ok bool, err error) {
	switch r.Kind {
	case SpoolKindEvidence:
		var e store.Evidence
		if json.Unmarshal(r.Data, &e) != nil || e.Node == "" {
			return true, spool.ErrSkip
		}
		return true, st.AddEvidence(e)
	case SpoolKindAudit:
		var a spooledAudit
		if json.Unmarshal(r.Data, &a) != nil || a.Token == "" || a.Entry.Action == "" {
			return true, spool.ErrSkip
		}
		seq, err := st.Audit(a.Entry)
		if err != nil {
			return true, err
		}
		return true, st.PutKV(auditTokenBucket, a.Token, binary.BigEndian.AppendUint64(nil, seq))
	case SpoolKindAuditResult:
		var res spooledAuditResult
		if json.Unmarshal(r.Data, &res) != nil || res.Token == "" {
			return true, spool.ErrSkip
		}
		v, found, err := st.GetKV(auditTokenBucket, res.Token)
		if err != nil {
			return true, err
		}
		if !found || len(v) != 8 {
			return true, spool.ErrSkip
		}
		var actErr error
		if res.Err != "" {
			actErr = errors.New(res.Err)
		}
		return true, st.FinishAudit(binary.BigEndian.Uint64(v), res.Result, actErr)
	}
	return false, nil
}
