package history

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
)

// importBatch is how many jobs one import transaction writes.
const importBatch = 500

// ImportResult counts what Import did.
type ImportResult struct {
	// Added jobs were not in the history before.
	Added int `json:"added"`
	// Updated jobs were known and gained facts from accounting.
	Updated int `json:"updated"`
	// Unchanged jobs were known with everything accounting says.
	Unchanged int `json:"unchanged"`
	// Skipped rows are job steps or jobs that have not ended.
	Skipped int `json:"skipped"`
}

// endedStates are the accounting states of jobs that are over.
var endedStates = map[string]bool{
	"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "NODE_FAIL": true,
	"OUT_OF_MEMORY": true, "PREEMPTED": true, "BOOT_FAIL": true, "DEADLINE": true,
}

// Import adds jobs from Slurm accounting to the history. Facts the history
// already holds (from the epilog) win; accounting only fills the gaps, so
// importing the same data again changes nothing. index, when set, is given
// each batch's jobs as stored (to index them for estimates); progress, when
// set, is called after each batch with the rows handled so far.
func Import(st *store.Store, jobs []slurm.Job, index func([]*store.Job) error, progress func(done, total int)) (ImportResult, error) {
	var res ImportResult
	for start := 0; start < len(jobs); start += importBatch {
		batch := map[string]*store.Job{}
		var ids []string
		for i := start; i < min(start+importBatch, len(jobs)); i++ {
			j := FromAccounting(&jobs[i])
			if j == nil {
				res.Skipped++
				continue
			}
			if _, dup := batch[j.JobID]; !dup {
				ids = append(ids, j.JobID)
			}
			batch[j.JobID] = j
		}
		var counts ImportResult
		stored := make([]*store.Job, 0, len(ids))
		err := st.UpdateJobs(ids, func(j *store.Job, exists bool) error {
			defer func() { c := *j; stored = append(stored, &c) }()
			if !exists {
				*j = *batch[j.JobID]
				counts.Added++
				return nil
			}
			before := *j
			mergeJob(j, batch[j.JobID], false)
			if reflect.DeepEqual(before, *j) {
				counts.Unchanged++
			} else {
				counts.Updated++
			}
			return nil
		})
		if err != nil {
			return res, fmt.Errorf("import accounting rows %d-%d: %w", start+1, start+len(ids), err)
		}
		if index != nil {
			if err := index(stored); err != nil {
				return res, fmt.Errorf("index imported rows %d-%d: %w", start+1, start+len(ids), err)
			}
		}
		res.Added += counts.Added
		res.Updated += counts.Updated
		res.Unchanged += counts.Unchanged
		if progress != nil {
			progress(min(start+importBatch, len(jobs)), len(jobs))
		}
	}
	return res, nil
}

// FromAccounting turns an accounting row into a history entry; it returns
// nil for job steps ("123.batch") and jobs that have not ended.
func FromAccounting(a *slurm.Job) *store.Job {
	state := normalizeState(a.State)
	if a.ID == "" || strings.Contains(a.ID, ".") || !endedStates[state] {
		return nil
	}
	j := &store.Job{
		JobID: a.ID, User: a.User, Account: a.Account, Partition: a.Partition, Name: a.Name, WorkDir: a.WorkDir,
		SubmitLine: a.Command, Submit: a.Submit, Start: a.Start, End: a.End, TimeLimit: a.TimeLimit,
		State: state, ExitCode: a.ExitCode, Signal: a.Signal,
		NodeList: a.NodeList, Nodes: a.Nodes, NumNodes: a.NumNodes, NumCPUs: a.NumCPUs, NumGPUs: a.GPUs,
		StdOut: a.StdOut, StdErr: a.StdErr, RequeueCount: a.RestartCount, Source: "sacct",
	}
	if isJobID(a.ArrayJobID) && isJobID(a.ArrayTaskID) {
		setArrayTask(j, a.ID, a.ArrayJobID, a.ArrayTaskID)
	}
	return j
}
