package trace

import "io"

// readCSVJobs reads a comma-separated job table whose header names at least
// the required columns, turning each row into a Job with row.
func readCSVJobs(r io.Reader, format string, required []string, row func(t *table) (Job, error)) ([]Job, error) {
	t, err := newTable(r, ',')
	if err != nil {
		return nil, err
	}
	if err := t.require(format, required...); err != nil {
		return nil, err
	}
	var jobs []Job
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return jobs, nil
		}
		j, err := row(t)
		if err != nil {
			return nil, err
		}
		if jobs, err = keep(jobs, j); err != nil {
			return nil, err
		}
	}
}
