package trace

import (
	"io"
	"strconv"
	"strings"
	"time"
)

// eagleTime is the timestamp layout of the NREL Eagle job records.
const eagleTime = "2006-01-02 15:04:05"

// readEagle parses NREL Eagle job records (Slurm accounting fields exported as
// CSV: job_id, user, account, partition, qos, wallclock_req, nodes_req,
// processors_req, gpus_req, submit_time, start_time, end_time, state, name,
// work_dir, submit_line).
func readEagle(r io.Reader) ([]Job, error) {
	return readCSVJobs(r, "eagle", []string{"job_id", "user", "submit_time", "start_time", "end_time"}, eagleJob)
}

// eagleJob turns one row of the table into a Job.
func eagleJob(t *table) (Job, error) {
	j := Job{
		ID:         t.get("job_id"),
		User:       t.get("user"),
		Account:    t.get("account"),
		Partition:  t.get("partition"),
		QOS:        t.get("qos"),
		Name:       t.get("name"),
		WorkDir:    t.get("work_dir"),
		SubmitLine: t.get("submit_line"),
		State:      normaliseState(t.get("state")),
		NNodes:     atoiOrZero(t.get("nodes_req")),
		NCPUs:      atoiOrZero(t.get("processors_req")),
		GPUs:       atoiOrZero(t.get("gpus_req")),
	}
	if v, err := strconv.ParseFloat(t.get("wallclock_req"), 64); err == nil && v > 0 {
		j.TimeLimit = v
	}
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"submit_time", &j.Submit}, {"start_time", &j.Start}, {"end_time", &j.End}} {
		v := t.get(f.name)
		if v == "" {
			continue
		}
		ts, err := time.Parse(eagleTime, v)
		if err != nil {
			return Job{}, t.errAt(f.name, err)
		}
		*f.dst = float64(ts.Unix())
	}
	return j, nil
}

// atoiOrZero parses an integer count, reading "2.0" as 2 and junk as 0.
func atoiOrZero(s string) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < 1e9 {
		return int(f)
	}
	return 0
}

// normaliseState reduces state names such as "CANCELLED by 1234" to the
// first word in upper case.
func normaliseState(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	if i := strings.IndexByte(s, ' '); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(s, "+")
}
