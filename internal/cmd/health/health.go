// Package health implements `schedmate health`: fast NVML checks for
// Slurm's HealthCheckProgram, nccl-tests runs with bisection, drain and
// resume of nodes, parsing of nccl-tests output, node status, and the
// per-job GPU sampler.
package health

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/gpu"
	"github.com/schedmate/schedmate/internal/nccltest"
	"github.com/schedmate/schedmate/internal/nodehealth"
	"github.com/schedmate/schedmate/slurm"
)

// NewCmd returns the health command group.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check GPU nodes, drain faulty ones and resume repaired ones",
		Long: `schedmate health checks GPU nodes with NVML (fast, suitable as Slurm's
HealthCheckProgram) and with nccl-tests (bandwidth and data correctness,
across nodes with bisection to find the faulty one). Failing nodes are
drained with a "schedmate: <check>: <detail>" reason; nodes schedmate drained
are resumed once the same check passes again. Nodes drained by anyone else
are never touched. Every action is audited first, and --dry-run shows what
would be done.`,
	}
	cmd.AddCommand(newCheckCmd(f), newNCCLCmd(f), newParseCmd(f), newStatusCmd(f), newSampleCmd(f), newIngestCmd(f))
	return cmd
}

// slurmCluster adapts a Slurm client to what the health policy needs.
type slurmCluster struct{ c slurm.Client }

// NodeStatus implements nodehealth.Cluster.
func (s slurmCluster) NodeStatus(ctx context.Context, name string) (nodehealth.NodeStatus, error) {
	n, err := s.c.Node(ctx, name)
	if err != nil {
		return nodehealth.NodeStatus{}, err
	}
	return nodehealth.NodeStatus{State: n.State, Reason: n.Reason}, nil
}

// DrainNode implements nodehealth.Cluster.
func (s slurmCluster) DrainNode(ctx context.Context, name, reason string) error {
	return s.c.DrainNode(ctx, name, reason)
}

// ResumeNode implements nodehealth.Cluster.
func (s slurmCluster) ResumeNode(ctx context.Context, name string) error {
	return s.c.ResumeNode(ctx, name)
}

// newPolicy builds the drain/resume policy that records into the factory's
// store.
func newPolicy(f *factory.Factory, cfg *config.Config, actor string, dryRun bool) (*nodehealth.Policy, error) {
	st, err := f.Store()
	if err != nil {
		return nil, factory.StoreError(err)
	}
	return policyWith(f, cfg, st, actor, dryRun)
}

// policyWith builds the drain/resume policy that records into rec and acts
// through the factory's Slurm client.
func policyWith(f *factory.Factory, cfg *config.Config, rec nodehealth.Recorder, actor string, dryRun bool) (*nodehealth.Policy, error) {
	client, err := f.Slurm()
	if err != nil {
		return nil, err
	}
	return &nodehealth.Policy{
		Cluster: slurmCluster{client}, Store: rec, DryRun: dryRun,
		DrainOnCheckError: cfg.Health.DrainOnCheckError, Actor: actor,
		FormatReason: slurm.Reason, IsOurs: slurm.IsOurs,
	}, nil
}

// thresholds turns the configured GPU-model-or-feature maps into bandwidth
// floors: feature entries first (they are the more specific), then models,
// longer names first so "GH200" is tried before "H200".
func thresholds(cfg config.Health) []nccltest.Threshold {
	var out []nccltest.Threshold
	for _, multi := range []bool{false, true} {
		m := cfg.BusBWThresholds
		if multi {
			m = cfg.MultiNodeBusBWThresholds
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if len(keys[i]) != len(keys[j]) {
				return len(keys[i]) > len(keys[j])
			}
			return keys[i] < keys[j]
		})
		for _, k := range keys {
			out = append(out, nccltest.Threshold{Feature: k, MultiNode: multi, MinBusBW: m[k]})
		}
		for _, k := range keys {
			out = append(out, nccltest.Threshold{GPU: k, MultiNode: multi, MinBusBW: m[k]})
		}
	}
	return out
}

// nodeName returns the node a check runs on: the flag, else
// SLURMD_NODENAME, else the short host name.
func nodeName(flag string, environ []string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "SLURMD_NODENAME="); ok && v != "" {
			return v, nil
		}
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("node name: %w (pass --node)", err)
	}
	short, _, _ := strings.Cut(h, ".")
	return short, nil
}

func getenvFrom(environ []string) func(string) string {
	return func(key string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(environ[i], key+"="); ok {
				return v
			}
		}
		return ""
	}
}

// openGPUs returns the node's GPU manager: the real driver (Null when it
// cannot start), or the simulated machine health.simulate_gpus names.
func openGPUs(f *factory.Factory, cfg *config.Config) (*gpu.Fallback, error) {
	if spec := cfg.Health.SimulateGPUs; spec != "" {
		m, err := gpu.OpenSimulated(spec)
		if err != nil {
			return nil, exitcode.New(exitcode.DataErr, fmt.Errorf("health.simulate_gpus: %w", err))
		}
		f.Logger().Info("using simulated GPUs (health.simulate_gpus), not the driver", "machine", spec)
		return m, nil
	}
	return gpu.Open(), nil
}

// writeJSON prints v as one indented JSON value.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printDecisions writes one line per decision.
func printDecisions(w io.Writer, ds []nodehealth.Decision) {
	for _, d := range ds {
		line := fmt.Sprintf("%-16s %-6s %-12s", d.Node, d.Source, d.Status)
		switch {
		case d.Action != nodehealth.ActionNone && d.DryRun:
			line += fmt.Sprintf(" would %s: %s", d.Action, d.Reason)
		case d.Action != nodehealth.ActionNone:
			line += fmt.Sprintf(" %s: %s", d.Action, d.Reason)
		case d.Note != "":
			line += " " + d.Note
		}
		if d.Err != "" {
			line += " (error: " + d.Err + ")"
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}
