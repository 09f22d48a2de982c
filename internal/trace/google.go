package trace

import (
	"io"
	"strconv"
)

// readGoogle parses the per-job summary of Google's clusterdata-2011-2
// job_events table (columns job_id, submit_time_s, start_time_s, end_time_s,
// state, user, job_name, logical_job_name, scheduling_class).
func readGoogle(r io.Reader) ([]Job, error) {
	return readCSVJobs(r, "google", []string{"job_id", "submit_time_s", "start_time_s", "end_time_s", "user", "job_name"}, googleJob)
}

// googleJob turns one row of the table into a Job.
func googleJob(t *table) (Job, error) {
	j := Job{
		ID:          t.get("job_id"),
		User:        t.get("user"),
		Name:        t.get("job_name"),
		LogicalName: t.get("logical_job_name"),
		Class:       t.get("scheduling_class"),
		State:       t.get("state"),
	}
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"submit_time_s", &j.Submit}, {"start_time_s", &j.Start}, {"end_time_s", &j.End}} {
		v, err := strconv.ParseFloat(t.get(f.name), 64)
		if err != nil {
			return Job{}, t.errAt(f.name, err)
		}
		*f.dst = v
	}
	if j.State == "" {
		j.State = "COMPLETED"
	}
	return j, nil
}
