package nccltest

import "strings"

// Threshold is a bus bandwidth floor for the runs it matches.
type Threshold struct {
	// GPU matches a substring of the GPU model, case-insensitively ("H100");
	// empty matches any model.
	GPU string `yaml:"gpu" mapstructure:"gpu" json:"gpu,omitempty"`
	// Feature matches a Slurm node feature exactly; empty matches any node.
	Feature string `yaml:"feature" mapstructure:"feature" json:"feature,omitempty"`
	// Collective is the test it applies to; empty means all_reduce.
	Collective string `yaml:"collective" mapstructure:"collective" json:"collective,omitempty"`
	// MultiNode selects runs across several nodes instead of one.
	MultiNode bool `yaml:"multi_node" mapstructure:"multi_node" json:"multi_node,omitempty"`
	// MinBusBW is the floor in GB/s.
	MinBusBW float64 `yaml:"min_busbw_gbps" mapstructure:"min_busbw_gbps" json:"min_busbw_gbps"`
}

// SelectThreshold returns the first threshold that matches the GPU model,
// one of the node features, the collective and the node count.
func SelectThreshold(ts []Threshold, gpuModel string, features []string, collective string, nodes int) (Threshold, bool) {
	if collective == "" {
		collective = "all_reduce"
	}
	model := strings.ToLower(gpuModel)
	for _, t := range ts {
		want := t.Collective
		if want == "" {
			want = "all_reduce"
		}
		if want != collective || t.MultiNode != (nodes > 1) || t.MinBusBW <= 0 {
			continue
		}
		if t.GPU != "" && (model == "" || !strings.Contains(model, strings.ToLower(t.GPU))) {
			continue
		}
		if t.Feature != "" && !contains(features, t.Feature) {
			continue
		}
		return t, true
	}
	return Threshold{}, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
