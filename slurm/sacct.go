package slurm

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/schedmate/schedmate/slurm/hostlist"
)

// SacctFields are the fields Accounting asks sacct for.
var SacctFields = []string{"JobID", "JobIDRaw", "JobName", "User", "Account", "Partition", "State",
	"ExitCode", "Submit", "Start", "End", "Timelimit", "NodeList", "NNodes", "NCPUS", "AllocTRES",
	"ReqTRES", "WorkDir", "Comment", "AdminComment", "Reason", "SubmitLine"}

// ParseSacct parses `sacct -P` output WITH its header line and any subset of
// the standard fields (case-insensitive names, in any order). Job steps
// ("123.batch", "123.0") are skipped: one Job per allocation. Array tasks
// ("12_3") get ArrayJobID and ArrayTaskID, and ID becomes JobIDRaw when present.
func ParseSacct(r io.Reader) ([]Job, error) {
	return parseSacct(r, "|")
}

// parseSacct parses sacct output whose fields are separated by sep.
func parseSacct(r io.Reader, sep string) ([]Job, error) {
	br := bufio.NewReader(r)
	var cols []string
	var jobs []Job
	err := eachLine(br, func(n int, line string) error {
		if cols == nil {
			cols = strings.Split(line, sep)
			for i := range cols {
				cols[i] = strings.ToLower(strings.TrimSpace(cols[i]))
			}
			if !slices.Contains(cols, "jobid") && !slices.Contains(cols, "jobidraw") {
				return fmt.Errorf("sacct header %q: no JobID column", truncate(line, 200))
			}
			return nil
		}
		row, err := alignRow(strings.Split(line, sep), cols, sep)
		if err != nil {
			return fmt.Errorf("sacct line %d: %w", n, err)
		}
		id := row["jobid"]
		if id == "" {
			id = row["jobidraw"]
		}
		if strings.Contains(id, ".") {
			return nil // a job step
		}
		j, err := jobFromSacct(id, row)
		if err != nil {
			return fmt.Errorf("sacct line %d: %w", n, err)
		}
		jobs = append(jobs, j)
		return nil
	})
	if err == nil && cols == nil {
		return nil, fmt.Errorf("sacct output: empty, no header")
	}
	return jobs, err
}

// freeText are the columns whose values may contain the separator.
var freeText = map[string]bool{"submitline": true, "comment": true, "admincomment": true,
	"jobname": true, "workdir": true, "reason": true, "constraints": true}

// maxExtraSeps bounds how many stray separators alignRow tries to place.
const maxExtraSeps = 8

// alignRow maps fields to columns. When free-text values contain the
// separator there are more fields than columns; the surplus is given to the
// free-text columns, trying placements until the row parses.
func alignRow(f, cols []string, sep string) (map[string]string, error) {
	extra := len(f) - len(cols)
	if extra < 0 || extra > maxExtraSeps {
		return nil, fmt.Errorf("%d fields, header has %d", len(f), len(cols))
	}
	var found map[string]string
	var try func(fi, ci, left int, row map[string]string) bool
	try = func(fi, ci, left int, row map[string]string) bool {
		if ci == len(cols) {
			if left != 0 {
				return false
			}
			if _, err := jobFromSacct("0", row); err != nil {
				return false
			}
			found = maps.Clone(row)
			return true
		}
		maxTake := 0
		if freeText[cols[ci]] {
			maxTake = left
		}
		for k := 0; k <= maxTake; k++ {
			row[cols[ci]] = strings.TrimSpace(strings.Join(f[fi:fi+k+1], sep))
			if try(fi+k+1, ci+1, left-k, row) {
				return true
			}
		}
		return false
	}
	if !try(0, 0, extra, make(map[string]string, len(cols))) {
		if extra == 0 {
			_, err := jobFromSacct("0", rowOf(f, cols))
			return nil, err
		}
		return nil, fmt.Errorf("%d fields, header has %d", len(f), len(cols))
	}
	return found, nil
}

func rowOf(f, cols []string) map[string]string {
	row := make(map[string]string, len(cols))
	for i, c := range cols {
		row[c] = strings.TrimSpace(f[i])
	}
	return row
}

func jobFromSacct(id string, row map[string]string) (Job, error) {
	j := Job{
		ID: id, Name: row["jobname"], User: row["user"], Account: row["account"],
		Partition: row["partition"], State: NormalizeState(row["state"]),
		Reason: nullable(row["reason"]), NodeList: nullable(row["nodelist"]),
		NumNodes: atoiOr(row["nnodes"], 0), NumCPUs: atoiOr(row["ncpus"], 0),
		WorkDir: row["workdir"], Comment: row["comment"], AdminComment: row["admincomment"],
		Command: row["submitline"],
	}
	if j.Reason == "None" {
		j.Reason = ""
	}
	if base, task, ok := strings.Cut(id, "_"); ok {
		j.ArrayJobID, j.ArrayTaskID = base, task
		if raw := row["jobidraw"]; raw != "" && !strings.Contains(task, "[") {
			j.ID = raw
		}
	}
	var err error
	if j.ExitCode, j.Signal, err = ParseExitCode(row["exitcode"]); err != nil {
		return j, err
	}
	if j.Submit, err = ParseTime(row["submit"]); err != nil {
		return j, err
	}
	if j.Start, err = ParseTime(row["start"]); err != nil {
		return j, err
	}
	if j.End, err = ParseTime(row["end"]); err != nil {
		return j, err
	}
	if j.TimeLimit, err = ParseDuration(row["timelimit"]); err != nil {
		return j, err
	}
	if j.Nodes, err = hostlist.Expand(j.NodeList); err != nil {
		return j, err
	}
	j.GPUs = ParseGPUs(row["alloctres"])
	if j.GPUs == 0 {
		j.GPUs = ParseGPUs(row["reqtres"])
	}
	return j, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
