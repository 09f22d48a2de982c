package trace

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SWF field positions (1-based in the Standard Workload Format definition).
const (
	swfJob       = 0
	swfSubmit    = 1
	swfWait      = 2
	swfRun       = 3
	swfAllocProc = 4
	swfReqProc   = 7
	swfReqTime   = 8
	swfStatus    = 10
	swfUser      = 11
	swfGroup     = 12
	swfApp       = 13
	swfQueue     = 14
	swfPartition = 15
	swfFields    = 18
)

// readSWF parses the Standard Workload Format of the Parallel Workloads
// Archive: ';' header comments, then one job per line with 18 whitespace
// separated fields, -1 meaning unknown.
func readSWF(r io.Reader) ([]Job, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	var jobs []Job
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, ";") {
			continue
		}
		f := strings.Fields(text)
		if len(f) < swfFields {
			return nil, fmt.Errorf("%w: swf line %d: %d fields, want %d", ErrFormat, line, len(f), swfFields)
		}
		num := func(i int) (float64, error) {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return 0, fmt.Errorf("%w: swf line %d field %d: %v", ErrFormat, line, i+1, err)
			}
			return v, nil
		}
		var v [swfFields]float64
		for i := range swfFields {
			x, err := num(i)
			if err != nil {
				return nil, err
			}
			v[i] = x
		}
		if v[swfRun] < 0 || v[swfSubmit] < 0 {
			continue
		}
		wait := max(v[swfWait], 0)
		j := Job{
			ID:        f[swfJob],
			User:      swfLabel("u", v[swfUser]),
			Account:   swfLabel("g", v[swfGroup]),
			Name:      swfLabel("app", v[swfApp]),
			Class:     swfLabel("q", v[swfQueue]),
			Partition: swfLabel("p", v[swfPartition]),
			Submit:    v[swfSubmit],
			Start:     v[swfSubmit] + wait,
			End:       v[swfSubmit] + wait + v[swfRun],
			State:     swfState(v[swfStatus]),
			NCPUs:     int(max(v[swfAllocProc], v[swfReqProc], 0)),
		}
		if v[swfReqTime] > 0 {
			j.TimeLimit = v[swfReqTime]
		}
		var err error
		if jobs, err = keep(jobs, j); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: swf line %d: %v", ErrFormat, line+1, err)
	}
	return jobs, nil
}

// swfLabel turns a numeric SWF identifier into a label; -1 (unknown) gives "".
func swfLabel(prefix string, v float64) string {
	if v < 0 {
		return ""
	}
	return prefix + strconv.FormatInt(int64(v), 10)
}

// swfState maps the SWF status code to a Slurm-like state name.
func swfState(code float64) string {
	switch code {
	case 1:
		return "COMPLETED"
	case 0:
		return "FAILED"
	case 5:
		return "CANCELLED"
	default:
		return "UNKNOWN"
	}
}
