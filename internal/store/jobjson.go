package store

import (
	"encoding/json"
	"time"
)

// jobFields is Job without its methods, so that the JSON methods below can
// reuse the default encoding of every other field.
type jobFields Job

// jobJSON is how a job is written as JSON: durations in seconds, with the
// run time derived for readers ("duration_s", ignored when read back).
type jobJSON struct {
	jobFields
	TimeLimit float64  `json:"time_limit_s,omitempty"`
	Duration  *float64 `json:"duration_s,omitempty"`
}

// MarshalJSON writes the job with its time limit and run time in seconds.
func (j Job) MarshalJSON() ([]byte, error) {
	out := jobJSON{jobFields: jobFields(j), TimeLimit: j.TimeLimit.Seconds()}
	if !j.Start.IsZero() && !j.End.IsZero() {
		s := j.Duration().Seconds()
		out.Duration = &s
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (j *Job) UnmarshalJSON(data []byte) error {
	var in jobJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*j = Job(in.jobFields)
	j.TimeLimit = time.Duration(in.TimeLimit * float64(time.Second))
	return nil
}
