package advisor

import (
	"math"

	"github.com/schedmate/schedmate/internal/store"
)

// InfoFromJob describes a recorded job the way a submission of it is
// described, so that a resubmission embeds the same.
func InfoFromJob(j *store.Job) JobInfo {
	info := JobInfo{
		ID:         j.JobID,
		User:       j.User,
		Account:    j.Account,
		Partition:  j.Partition,
		Name:       j.Name,
		WorkDir:    j.WorkDir,
		Command:    j.Metadata[MetaCommand],
		GitBranch:  j.Metadata[MetaGitBranch],
		NumNodes:   j.NumNodes,
		NumCPUs:    j.NumCPUs,
		GPUs:       j.NumGPUs,
		TimeLimitS: j.TimeLimit.Seconds(),
		Metadata:   j.Metadata,
	}
	return info
}

// RecordOf builds the index record of an ended job; ok is false for jobs
// that never ran.
func RecordOf(j *store.Job) (rec Record, resubmit uint64, ok bool) {
	if j.Start.IsZero() || j.End.IsZero() || j.End.Before(j.Start) {
		return Record{}, 0, false
	}
	info := InfoFromJob(j)
	util, mem, step := math.NaN(), math.NaN(), math.NaN()
	if j.GPU != nil {
		if j.GPU.MeanSMUtil > 0 {
			util = j.GPU.MeanSMUtil
		}
		if j.GPU.PeakMemBytes > 0 {
			mem = float64(j.GPU.PeakMemBytes) / (1 << 30)
		}
	}
	if j.Metrics != nil && j.Metrics.StepTimeS > 0 {
		step = j.Metrics.StepTimeS
	}
	rec = NewRecord(&info, j.End.Unix(), j.Duration().Seconds(), ParseState(j.State), util, mem, step)
	return rec, ResubmitKey(&info), true
}

// IndexJobs adds ended jobs to the retrieval index (the end hook calls it
// for each job it records; an import calls it in batches).
func IndexJobs(kv KV, jobs ...*store.Job) error {
	recs := make([]Record, 0, len(jobs))
	keys := make([]uint64, 0, len(jobs))
	for _, j := range jobs {
		if rec, key, ok := RecordOf(j); ok {
			recs = append(recs, rec)
			keys = append(keys, key)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	return Put(kv, recs, keys)
}
