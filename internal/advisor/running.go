package advisor

import (
	"math"

	"github.com/schedmate/schedmate/internal/vector"
)

// maxRunningPerProgram bounds the running jobs kept per program block.
const maxRunningPerProgram = 64

// runningWeight discounts a running job against an ended one: a run that
// is still going is often one stuck or left over, not the program's norm.
const runningWeight = 0.1

// running is a job that has started and not yet ended: its elapsed time at a
// query is a lower bound on its duration (a censored observation).
type running struct {
	jobID string
	vec   vector.Vec
	start int64
}

// Started records a job that is running since start (Unix seconds or the
// trace clock). Add removes it again when the job ends.
func (ix *Index) Started(j *JobInfo, start int64) {
	k := KeysOf(j)
	list := ix.running[k.Logical]
	if len(list) >= maxRunningPerProgram {
		list = append(list[:0], list[1:]...)
	}
	ix.running[k.Logical] = append(list, running{jobID: j.ID, vec: Embed(j), start: start})
}

// ended drops an ended job from the running jobs of its program block.
func (ix *Index) ended(rec *Record) {
	list := ix.running[rec.LogicalKey]
	for i := range list {
		if list[i].jobID == rec.JobID {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(ix.running, rec.LogicalKey)
		return
	}
	ix.running[rec.LogicalKey] = list
}

// runningSimilar returns the query's similar running jobs as censored
// candidates whose duration is their elapsed time at q.Now.
func (ix *Index) runningSimilar(q Query, threshold float32) []candidate {
	if q.Now <= 0 {
		return nil
	}
	var out []candidate
	for _, r := range ix.running[q.Keys.Logical] {
		elapsed := q.Now - r.start
		if elapsed <= 0 {
			continue
		}
		s := vector.Cosine(&q.Vec, &r.vec)
		if s < threshold {
			continue
		}
		nan := float32(math.NaN())
		rec := &Record{JobID: r.jobID, DurationS: float32(elapsed), State: StateOther,
			GPUUtil: nan, GPUMemGB: nan, StepTimeS: nan}
		out = append(out, candidate{rec: rec, sim: s, w: runningWeight * sharpen(s), censored: true})
	}
	return out
}
