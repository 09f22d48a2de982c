package nodehealth

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/nccltest"
	"github.com/schedmate/schedmate/internal/runner"
)

// standIn returns a Tester whose node command runs the repository's
// nccl-tests stand-in, which replays real recorded outputs and fails when
// the node set holds one of bad.
func standIn(t *testing.T, mode string, bad ...string) *nccltest.Tester {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "test", "ncclstandin", "all_reduce_perf"))
	if err != nil {
		t.Fatal(err)
	}
	badList := ""
	for i, b := range bad {
		if i > 0 {
			badList += ","
		}
		badList += b
	}
	return &nccltest.Tester{
		Runner:       runner.Exec{},
		NodesCommand: []string{"env", "NCCL_STANDIN_NODES={nodes}", "NCCL_STANDIN_BAD=" + badList, "NCCL_STANDIN_MODE=" + mode, script},
		Timeout:      30 * time.Second,
		Thresholds:   []nccltest.Threshold{{GPU: "A100", MultiNode: true, MinBusBW: 200}},
	}
}

func eightNodes() []string {
	var out []string
	for i := 1; i <= 8; i++ {
		out = append(out, fmt.Sprintf("n%02d", i))
	}
	return out
}

func TestNCCLDrainBisectResume(t *testing.T) {
	for _, mode := range []string{"corrupt", "slow"} {
		t.Run(mode, func(t *testing.T) {
			nodes := eightNodes()
			c := &fakeCluster{nodes: map[string]NodeStatus{}}
			for _, n := range nodes {
				c.nodes[n] = NodeStatus{State: "IDLE"}
			}
			c.nodes["n02"] = NodeStatus{State: "DRAINED", Reason: "maintenance -- ops"}
			st := openStore(t)
			p := &Policy{Cluster: c, Store: st, Actor: "test", IsOurs: ours, FormatReason: reasonOf}

			run := CheckNCCL(context.Background(), standIn(t, mode, "n05"), "", nodes)
			if run.Bisection == nil || !reflect.DeepEqual(run.Bisection.Bad, []string{"n05"}) {
				t.Fatalf("bisection %+v", run.Bisection)
			}
			if run.Bisection.Rounds > 4 {
				t.Errorf("rounds = %d", run.Bisection.Rounds)
			}
			t.Logf("%s: found %v in %d rounds, %d runs", mode, run.Bisection.Bad, run.Bisection.Rounds, len(run.Bisection.Trials)+1)
			ds, err := p.Apply(context.Background(), run.Outcomes)
			if err != nil {
				t.Fatal(err)
			}
			if got := actions(ds); !reflect.DeepEqual(got, []string{"drain n05"}) {
				t.Fatalf("actions %v, want only n05 drained", got)
			}
			if c.nodes["n02"].Reason != "maintenance -- ops" {
				t.Fatalf("admin drain touched: %+v", c.nodes["n02"])
			}

			// The node is repaired: everything passes, our drain is undone,
			// the admin's is not.
			run = CheckNCCL(context.Background(), standIn(t, mode), "", nodes)
			ds, err = p.Apply(context.Background(), run.Outcomes)
			if err != nil {
				t.Fatal(err)
			}
			if got := actions(ds); !reflect.DeepEqual(got, []string{"resume n05"}) {
				t.Fatalf("actions %v, want only n05 resumed", got)
			}
			if c.nodes["n02"].State != "DRAINED" {
				t.Fatalf("admin drain undone: %+v", c.nodes["n02"])
			}
		})
	}
}

func TestNCCLBrokenCheckDrainsNothing(t *testing.T) {
	nodes := eightNodes()
	c := &fakeCluster{nodes: map[string]NodeStatus{}}
	for _, n := range nodes {
		c.nodes[n] = NodeStatus{State: "IDLE"}
	}
	tr := &nccltest.Tester{Runner: runner.Exec{}, NodesCommand: []string{"/nonexistent/all_reduce_perf"}, Timeout: 5 * time.Second}
	run := CheckNCCL(context.Background(), tr, "", nodes)
	p := &Policy{Cluster: c, Store: openStore(t), IsOurs: ours, FormatReason: reasonOf}
	ds, err := p.Apply(context.Background(), run.Outcomes)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Status != StatusCheckError || d.Action != ActionNone {
			t.Fatalf("decision %+v, want check_error and no action", d)
		}
	}
}

func actions(ds []Decision) []string {
	var out []string
	for _, d := range ds {
		if d.Action != ActionNone {
			out = append(out, string(d.Action)+" "+d.Node)
		}
	}
	sort.Strings(out)
	return out
}
