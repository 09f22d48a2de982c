package trace

import (
	"fmt"
	"io"

	"github.com/schedmate/schedmate/slurm"
)

// readSacct parses `sacct -P` output (a '|' separated table with a header,
// any subset of JobID, User, JobName, Partition, Account, NCPUS, NNodes,
// AllocTRES, ReqTRES, Timelimit, Submit, Start, End, State, WorkDir,
// SubmitLine) with the slurm package's parser. Job steps are skipped.
func readSacct(r io.Reader) ([]Job, error) {
	sjobs, err := slurm.ParseSacct(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	var jobs []Job
	for i := range sjobs {
		s := &sjobs[i]
		if s.Submit.IsZero() || s.Start.IsZero() || s.End.IsZero() {
			continue
		}
		j := Job{
			ID:         s.ID,
			User:       s.User,
			Account:    s.Account,
			Partition:  s.Partition,
			Name:       s.Name,
			WorkDir:    s.WorkDir,
			SubmitLine: s.Command,
			State:      normaliseState(s.State),
			NCPUs:      s.NumCPUs,
			NNodes:     s.NumNodes,
			GPUs:       s.GPUs,
			TimeLimit:  s.TimeLimit.Seconds(),
			Submit:     float64(s.Submit.Unix()),
			Start:      float64(s.Start.Unix()),
			End:        float64(s.End.Unix()),
		}
		if jobs, err = keep(jobs, j); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}
