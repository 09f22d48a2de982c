package nodehealth

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/spool"
)

// TestSpoolRecorderIngest runs the policy on a node that cannot open the
// database: evidence and audit entries go into the spool, the drain still
// happens, and the controller's ingest puts everything into the store with
// each audit entry completed by its result.
func TestSpoolRecorderIngest(t *testing.T) {
	sp := spool.New(filepath.Join(t.TempDir(), "health.spool"))
	cluster := &fakeCluster{nodes: map[string]NodeStatus{"n01": {State: "IDLE"}, "n02": {State: "IDLE"}}}
	p := &Policy{Cluster: cluster, Store: NewSpoolRecorder(sp, "n01"), Actor: "health check", FormatReason: reasonOf, IsOurs: ours}
	outcomes := []Outcome{
		{Node: "n01", Source: SourceNVML, Status: StatusFail, Check: "ecc", Detail: "GPU 3 ecc: 2 uncorrectable"},
		{Node: "n02", Source: SourceNVML, Status: StatusPass, Check: "nvml", Detail: "8 GPUs healthy"},
	}
	if _, err := p.Apply(context.Background(), outcomes); err != nil {
		t.Fatal(err)
	}
	if len(cluster.calls) != 1 {
		t.Fatalf("calls %v, want one drain", cluster.calls)
	}
	pending, err := sp.Pending()
	if err != nil || len(pending) != 4 {
		t.Fatalf("spool holds %v (%v), want 2 evidence, audit, result", pending, err)
	}

	st := openStore(t)
	res, err := IngestSpool(sp, st)
	if err != nil || res.Applied != 4 || res.SetAside != 0 {
		t.Fatalf("ingest %+v %v", res, err)
	}
	ev, err := st.NodeEvidence("n01", time.Time{})
	if err != nil || len(ev) != 1 || ev[0].OK || ev[0].Check != "ecc" {
		t.Fatalf("n01 evidence %+v %v", ev, err)
	}
	audit, err := st.AuditEntries(time.Time{}, 0)
	if err != nil || len(audit) != 1 {
		t.Fatalf("audit %+v %v", audit, err)
	}
	if a := audit[0]; a.Action != "node.drain" || a.Target != "n01" || a.Result != "done" {
		t.Fatalf("audit entry %+v", a)
	}
}

// TestSpoolRecorderFailedAction keeps the error of a failed drain with its
// audit entry, and sets aside a result whose entry never arrived.
func TestSpoolRecorderFailedAction(t *testing.T) {
	sp := spool.New(filepath.Join(t.TempDir(), "health.spool"))
	cluster := &fakeCluster{nodes: map[string]NodeStatus{"n01": {State: "IDLE"}}, fail: errors.New("scontrol: access denied")}
	rec := NewSpoolRecorder(sp, "n01")
	p := &Policy{Cluster: cluster, Store: rec, Actor: "health check", FormatReason: reasonOf, IsOurs: ours}
	if _, err := p.Apply(context.Background(), []Outcome{{Node: "n01", Source: SourceNVML, Status: StatusFail, Check: "ecc", Detail: "x"}}); err == nil {
		t.Fatal("failed drain reported no error")
	}
	if err := rec.FinishAudit(99, "done", nil); err == nil {
		t.Fatal("finish of an unknown audit entry succeeded")
	}
	if err := sp.Write(SpoolKindAuditResult, spooledAuditResult{Token: "elsewhere.1", Result: "done"}); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	res, err := IngestSpool(sp, st)
	if err != nil || res.Applied != 3 || res.SetAside != 1 {
		t.Fatalf("ingest %+v %v", res, err)
	}
	audit, err := st.AuditEntries(time.Time{}, 0)
	if err != nil || len(audit) != 1 || audit[0].Result != "failed" || audit[0].Err == "" {
		t.Fatalf("audit %+v %v", audit, err)
	}
}
