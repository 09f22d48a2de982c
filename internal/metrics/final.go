package metrics

import "github.com/schedmate/schedmate/internal/store"

// Final reads the last training figures of the log at path in the form a
// job's history keeps. It returns nil, nil when the log has no training
// progress line.
func Final(path string, opts Options) (*store.FinalMetrics, error) {
	rep, err := ExtractFile(path, opts)
	if err != nil {
		return nil, err
	}
	return rep.FinalMetrics(), nil
}

// FinalMetrics converts the report for a job's history; nil when the report
// has neither a step time nor a step.
func (rep *Report) FinalMetrics() *store.FinalMetrics {
	if rep.StepTimeS == nil && rep.Step == nil {
		return nil
	}
	fm := &store.FinalMetrics{ThroughputUnit: rep.ThroughputUnit}
	if rep.StepTimeS != nil {
		fm.StepTimeS = *rep.StepTimeS
	}
	if rep.Throughput != nil {
		fm.Throughput = *rep.Throughput
	}
	if rep.Step != nil {
		fm.Step = *rep.Step
	}
	if rep.TotalSteps != nil {
		fm.TotalSteps = *rep.TotalSteps
	}
	if rep.Loss != nil {
		loss := *rep.Loss
		fm.Loss = &loss
	}
	return fm
}
