package nodehealth

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/schedmate/schedmate/internal/gpu"
	"github.com/schedmate/schedmate/internal/nccltest"
)

// FromGPUReport turns an NVML check report into the node's outcome: fail
// on any failing finding, unavailable without NVML, pass otherwise.
func FromGPUReport(node string, r gpu.Report) Outcome {
	o := Outcome{Node: node, Source: SourceNVML, Check: "nvml", Details: map[string]string{"gpus": strconv.Itoa(r.GPUs)}}
	if r.Driver != "" {
		o.Details["driver"] = r.Driver
	}
	fails := r.Failures()
	if !r.Available && len(fails) == 0 {
		o.Status = StatusUnavailable
		o.Detail = "no GPU management: " + r.Reason
		return o
	}
	if len(fails) == 0 {
		o.Status = StatusPass
		o.Detail = fmt.Sprintf("%d GPUs healthy", r.GPUs)
		return o
	}
	o.Status = StatusFail
	o.Check = fails[0].Check
	parts := make([]string, 0, len(fails))
	for i, f := range fails {
		where := "node"
		if f.GPU >= 0 {
			where = fmt.Sprintf("GPU %d", f.GPU)
		}
		text := fmt.Sprintf("%s %s: %s", where, f.Check, f.Detail)
		parts = append(parts, text)
		if i < 8 {
			o.Details[fmt.Sprintf("finding.%d", i)] = text
		}
	}
	o.Detail = strings.Join(parts, "; ")
	if len(o.Detail) > 200 {
		o.Detail = o.Detail[:200] + "..."
	}
	return o
}

// NCCLRun is the outcome of CheckNCCL: per-node outcomes plus the runs and
// bisection that produced them.
type NCCLRun struct {
	Outcomes  []Outcome           `json:"outcomes"`
	First     nccltest.Report     `json:"first"`
	Bisection *nccltest.Bisection `json:"bisection,omitempty"`
}

// CheckNCCL tests nodes with nccl-tests (the local node, named local, when
// nodes is empty). A multi-node failure is bisected so that only the nodes
// proven faulty fail; nodes that cannot be cleared or convicted, and every
// node of a run whose check broke, get StatusCheckError and are not drained
// by default; nodes Slurm could not give the test at once (busy with other
// jobs) get StatusNotTested.
func CheckNCCL(ctx context.Context, t *nccltest.Tester, local string, nodes []string) NCCLRun {
	var run NCCLRun
	run.First = t.Test(ctx, nodes)
	v := run.First.Verdict
	targets := nodes
	if len(targets) == 0 {
		targets = []string{local}
	}
	if len(nodes) <= 1 || v.Status != nccltest.StatusFail {
		for _, n := range targets {
			run.Outcomes = append(run.Outcomes, ncclOutcome(n, v))
		}
		return run
	}
	b := nccltest.Bisect(ctx, nodes, func(ctx context.Context, set []string) nccltest.Verdict {
		return t.Test(ctx, set).Verdict
	})
	run.Bisection = &b
	last := map[string]nccltest.Verdict{}
	for _, tr := range b.Trials {
		for _, n := range tr.Nodes {
			last[n] = tr.Verdict
		}
	}
	for _, n := range nodes {
		o := ncclOutcome(n, last[n])
		switch {
		case contains(b.Bad, n):
			o.Status = StatusFail
			o.Detail = fmt.Sprintf("isolated by bisection: %s", last[n].Detail())
		case contains(b.Suspects, n):
			o.Status = StatusCheckError
			o.Detail = "suspect, not isolated: " + b.Note
			if b.Note == "" {
				o.Detail = "suspect, not isolated: its check broke"
			}
		case contains(b.Good, n):
			o.Status = StatusPass
		case last[n].Status == nccltest.StatusNotTested:
			o.Status = StatusNotTested
		default:
			o.Status = StatusCheckError
			o.Detail = "not tested during bisection"
		}
		o.Details["rounds"] = strconv.Itoa(b.Rounds)
		run.Outcomes = append(run.Outcomes, o)
	}
	return run
}

func ncclOutcome(node string, v nccltest.Verdict) Outcome {
	o := Outcome{Node: node, Source: SourceNCCL, Check: "nccl", Detail: v.Detail(), Details: map[string]string{}}
	switch v.Status {
	case nccltest.StatusPass:
		o.Status = StatusPass
	case nccltest.StatusFail:
		o.Status = StatusFail
	case nccltest.StatusNotTested:
		o.Status = StatusNotTested
	default:
		o.Status = StatusCheckError
	}
	if v.Kind != "" {
		o.Check = v.Kind
	}
	if v.BusBW > 0 {
		o.Details["busbw_gbps"] = strconv.FormatFloat(v.BusBW, 'f', 2, 64)
	}
	if v.Threshold > 0 {
		o.Details["threshold_gbps"] = strconv.FormatFloat(v.Threshold, 'f', 2, 64)
	}
	return o
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
