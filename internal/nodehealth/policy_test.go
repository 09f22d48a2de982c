package nodehealth

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/store"
)

// fakeCluster keeps node states in memory and logs the calls made.
type fakeCluster struct {
	nodes map[string]NodeStatus
	calls []string
	fail  error
}

func (c *fakeCluster) NodeStatus(_ context.Context, name string) (NodeStatus, error) {
	st, ok := c.nodes[name]
	if !ok {
		return st, errors.New("invalid node name")
	}
	return st, nil
}

func (c *fakeCluster) DrainNode(_ context.Context, name, reason string) error {
	c.calls = append(c.calls, "drain "+name+" "+reason)
	if c.fail != nil {
		return c.fail
	}
	c.nodes[name] = NodeStatus{State: "IDLE+DRAIN", Reason: reason}
	return nil
}

func (c *fakeCluster) ResumeNode(_ context.Context, name string) error {
	c.calls = append(c.calls, "resume "+name)
	if c.fail != nil {
		return c.fail
	}
	c.nodes[name] = NodeStatus{State: "IDLE"}
	return nil
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func ours(reason string) bool { return strings.HasPrefix(reason, "schedmate:") }

func reasonOf(component, detail string) string { return "schedmate: " + component + ": " + detail }

func TestPolicyDecisions(t *testing.T) {
	tests := []struct {
		name       string
		node       NodeStatus
		outcome    Outcome
		checkErrOK bool
		dryRun     bool
		wantAction Action
		wantCalls  []string
	}{
		{name: "failing idle node is drained", node: NodeStatus{State: "IDLE"},
			outcome:    Outcome{Source: SourceNCCL, Status: StatusFail, Detail: "busbw 2.8 GB/s below 20"},
			wantAction: ActionDrain, wantCalls: []string{"drain n1 schedmate: nccl: busbw 2.8 GB/s below 20"}},
		{name: "dry run changes nothing", node: NodeStatus{State: "IDLE"}, dryRun: true,
			outcome:    Outcome{Source: SourceNVML, Status: StatusFail, Detail: "GPU 3 ecc"},
			wantAction: ActionDrain},
		{name: "someone else's drain is left alone", node: NodeStatus{State: "DRAINED", Reason: "bad DIMM -- ops"},
			outcome:    Outcome{Source: SourceNVML, Status: StatusFail, Detail: "GPU 3 ecc"},
			wantAction: ActionNone},
		{name: "someone else's drain is never resumed", node: NodeStatus{State: "DRAINED", Reason: "maintenance"},
			outcome:    Outcome{Source: SourceNVML, Status: StatusPass},
			wantAction: ActionNone},
		{name: "our own drain is resumed on a pass of the same check", node: NodeStatus{State: "IDLE+DRAIN", Reason: "schedmate: nccl: low bandwidth"},
			outcome:    Outcome{Source: SourceNCCL, Status: StatusPass},
			wantAction: ActionResume, wantCalls: []string{"resume n1"}},
		{name: "an NVML pass does not clear an nccl drain", node: NodeStatus{State: "IDLE+DRAIN", Reason: "schedmate: nccl: low bandwidth"},
			outcome:    Outcome{Source: SourceNVML, Status: StatusPass},
			wantAction: ActionNone},
		{name: "broken check does not drain", node: NodeStatus{State: "IDLE"},
			outcome:    Outcome{Source: SourceNCCL, Status: StatusCheckError, Detail: "nccl-tests command not found"},
			wantAction: ActionNone},
		{name: "broken check drains when configured", node: NodeStatus{State: "IDLE"}, checkErrOK: true,
			outcome:    Outcome{Source: SourceNCCL, Status: StatusCheckError, Detail: "no result within 5m0s (hang)"},
			wantAction: ActionDrain, wantCalls: []string{"drain n1 schedmate: nccl: check error: no result within 5m0s (hang)"}},
		{name: "no GPU is not a fault", node: NodeStatus{State: "IDLE"},
			outcome:    Outcome{Source: SourceNVML, Status: StatusUnavailable},
			wantAction: ActionNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeCluster{nodes: map[string]NodeStatus{"n1": tt.node}}
			st := openStore(t)
			p := &Policy{Cluster: c, Store: st, DryRun: tt.dryRun, DrainOnCheckError: tt.checkErrOK, Actor: "test", IsOurs: ours, FormatReason: reasonOf}
			tt.outcome.Node = "n1"
			ds, err := p.Apply(context.Background(), []Outcome{tt.outcome})
			if err != nil {
				t.Fatal(err)
			}
			if ds[0].Action != tt.wantAction {
				t.Fatalf("action = %s (%s), want %s", ds[0].Action, ds[0].Note, tt.wantAction)
			}
			if !reflect.DeepEqual(c.calls, tt.wantCalls) {
				t.Errorf("calls = %q, want %q", c.calls, tt.wantCalls)
			}
			ev, err := st.NodeEvidence("n1", time.Time{})
			if err != nil || len(ev) != 1 {
				t.Fatalf("evidence %v %v", ev, err)
			}
			wantTrusted := tt.outcome.Status == StatusPass || tt.outcome.Status == StatusFail
			if ev[0].Trusted != wantTrusted || ev[0].OK == (tt.outcome.Status == StatusFail) {
				t.Errorf("evidence %+v", ev[0])
			}
			audit, err := st.AuditEntries(time.Time{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantAction == ActionNone {
				if len(audit) != 0 {
					t.Errorf("audit entries %+v for no action", audit)
				}
				return
			}
			if len(audit) != 1 || audit[0].DryRun != tt.dryRun || audit[0].Target != "n1" {
				t.Fatalf("audit %+v", audit)
			}
			if want := map[bool]string{true: "dry-run", false: "done"}[tt.dryRun]; audit[0].Result != want {
				t.Errorf("audit result %q, want %q", audit[0].Result, want)
			}
		})
	}
}

func TestPolicyActionFailureIsAudited(t *testing.T) {
	c := &fakeCluster{nodes: map[string]NodeStatus{"n1": {State: "IDLE"}, "n2": {State: "IDLE"}}, fail: errors.New("scontrol: Invalid user")}
	st := openStore(t)
	p := &Policy{Cluster: c, Store: st, IsOurs: ours, FormatReason: reasonOf}
	ds, err := p.Apply(context.Background(), []Outcome{
		{Node: "n1", Source: SourceNVML, Status: StatusFail, Detail: "x"},
		{Node: "n2", Source: SourceNVML, Status: StatusFail, Detail: "y"},
	})
	if err == nil || len(ds) != 2 || ds[0].Err == "" || ds[1].Err == "" {
		t.Fatalf("decisions %+v err %v; want both failed and reported", ds, err)
	}
	audit, _ := st.AuditEntries(time.Time{}, 0)
	if len(audit) != 2 || audit[0].Result != "failed" || !strings.Contains(audit[0].Err, "Invalid user") {
		t.Fatalf("audit %+v", audit)
	}
}
