package slurm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/schedmate/schedmate/slurm/hostlist"
)

// FieldSep separates fields in the squeue and sacct output schedmate asks
// for: the ASCII unit separator, which job names and comments do not contain
// in practice.
const FieldSep = "\x1f"

// MaxLine bounds one line of Slurm output.
const MaxLine = 1 << 20

// squeueFields are the squeue -o specifiers, in the order parseSqueueLine reads them.
var squeueFields = []string{"%A", "%F", "%K", "%j", "%u", "%a", "%P", "%T", "%r", "%V", "%S", "%e", "%l", "%N", "%D", "%C", "%b", "%Z", "%k", "%o"}

// SqueueFormat is the -o argument for ParseSqueue.
var SqueueFormat = strings.Join(squeueFields, FieldSep)

// ParseSqueue parses `squeue -h -o SqueueFormat` output.
func ParseSqueue(r io.Reader) ([]Job, error) {
	var jobs []Job
	err := eachLine(r, func(n int, line string) error {
		f := strings.SplitN(line, FieldSep, len(squeueFields))
		if len(f) != len(squeueFields) {
			return fmt.Errorf("squeue line %d: %d fields, want %d", n, len(f), len(squeueFields))
		}
		j := Job{
			ID: f[0], Name: f[3], User: f[4], Account: nullable(f[5]), Partition: f[6],
			State: NormalizeState(f[7]), Reason: nullable(f[8]), NodeList: nullable(f[13]),
			NumNodes: atoiOr(f[14], 0), NumCPUs: atoiOr(f[15], 0), WorkDir: nullable(f[17]),
			Comment: nullable(f[18]), Command: nullable(f[19]),
		}
		if f[1] != "N/A" && f[1] != f[0] || (f[2] != "N/A" && f[2] != "") {
			j.ArrayJobID, j.ArrayTaskID = f[1], nullable(f[2])
		}
		if j.Reason == "None" {
			j.Reason = ""
		}
		var err error
		if j.Submit, err = ParseTime(f[9]); err != nil {
			return fmt.Errorf("squeue line %d: %w", n, err)
		}
		if j.Start, err = ParseTime(f[10]); err != nil {
			return fmt.Errorf("squeue line %d: %w", n, err)
		}
		if j.End, err = ParseTime(f[11]); err != nil {
			return fmt.Errorf("squeue line %d: %w", n, err)
		}
		if j.TimeLimit, err = ParseDuration(f[12]); err != nil {
			return fmt.Errorf("squeue line %d: %w", n, err)
		}
		j.GPUs = ParseGPUs(f[16]) * max(j.NumNodes, 1)
		if j.Nodes, err = hostlist.Expand(j.NodeList); err != nil {
			return fmt.Errorf("squeue line %d: %w", n, err)
		}
		jobs = append(jobs, j)
		return nil
	})
	return jobs, err
}

// keyRE matches the start of a "Key=" token in scontrol's one-line output.
var keyRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9_/:]*=`)

// ParseKeyValues splits one line of `scontrol show -o` output into keys and
// values. Values may contain spaces (Comment=, Reason=, Command=, OS=): a
// token that does not start with "Key=" continues the previous value.
func ParseKeyValues(line string) map[string]string {
	kv := map[string]string{}
	last := ""
	for _, tok := range strings.Split(strings.TrimRight(line, " \r\n"), " ") {
		if loc := keyRE.FindStringIndex(tok); loc != nil {
			last = tok[:loc[1]-1]
			kv[last] = tok[loc[1]:]
			continue
		}
		if last != "" {
			kv[last] += " " + tok
		}
	}
	for k, v := range kv {
		kv[k] = strings.TrimSpace(v)
	}
	return kv
}

// ParseScontrolJobs parses `scontrol show job -o` output, one job per line.
func ParseScontrolJobs(r io.Reader) ([]Job, error) {
	var jobs []Job
	err := eachLine(r, func(n int, line string) error {
		kv := ParseKeyValues(line)
		if kv["JobId"] == "" {
			return fmt.Errorf("scontrol job line %d: no JobId", n)
		}
		j, err := jobFromKV(kv)
		if err != nil {
			return fmt.Errorf("scontrol job line %d: %w", n, err)
		}
		jobs = append(jobs, j)
		return nil
	})
	return jobs, err
}

func jobFromKV(kv map[string]string) (Job, error) {
	user, _, _ := strings.Cut(kv["UserId"], "(")
	nodes, _, _ := strings.Cut(kv["NumNodes"], "-")
	j := Job{
		ID: kv["JobId"], ArrayJobID: kv["ArrayJobId"], ArrayTaskID: kv["ArrayTaskId"],
		Name: kv["JobName"], User: user, Account: nullable(kv["Account"]),
		Partition: nullable(kv["Partition"]), State: NormalizeState(kv["JobState"]),
		Reason: nullable(kv["Reason"]), NodeList: nullable(kv["NodeList"]),
		NumNodes: atoiOr(nodes, 0), NumCPUs: atoiOr(kv["NumCPUs"], 0),
		WorkDir: nullable(kv["WorkDir"]), StdOut: nullable(kv["StdOut"]), StdErr: nullable(kv["StdErr"]),
		Command: nullable(kv["Command"]), Comment: nullable(kv["Comment"]),
		AdminComment: nullable(kv["AdminComment"]), RestartCount: atoiOr(kv["Restarts"], 0),
		ExcNodes: nullable(kv["ExcNodeList"]),
	}
	if j.Reason == "None" {
		j.Reason = ""
	}
	var err error
	if j.ExitCode, j.Signal, err = ParseExitCode(kv["ExitCode"]); err != nil {
		return j, err
	}
	if j.Submit, err = ParseTime(kv["SubmitTime"]); err != nil {
		return j, err
	}
	if j.Start, err = ParseTime(kv["StartTime"]); err != nil {
		return j, err
	}
	if j.End, err = ParseTime(kv["EndTime"]); err != nil {
		return j, err
	}
	if j.TimeLimit, err = ParseDuration(kv["TimeLimit"]); err != nil {
		return j, err
	}
	if j.Nodes, err = hostlist.Expand(j.NodeList); err != nil {
		return j, err
	}
	j.GPUs = ParseGPUs(kv["TRES"])
	if j.GPUs == 0 {
		j.GPUs = ParseGPUs(kv["TresPerNode"]) * max(j.NumNodes, 1)
	}
	if j.GPUs == 0 {
		j.GPUs = ParseGPUs(kv["TresPerJob"])
	}
	return j, nil
}

// reasonStampRE matches the " [user@time]" suffix scontrol adds to node reasons.
var reasonStampRE = regexp.MustCompile(` \[[^\[\]]*@[^\[\]]*\]$`)

// ParseScontrolNodes parses `scontrol show node -o` output, one node per line.
func ParseScontrolNodes(r io.Reader) ([]Node, error) {
	var nodes []Node
	err := eachLine(r, func(n int, line string) error {
		kv := ParseKeyValues(line)
		if kv["NodeName"] == "" {
			return fmt.Errorf("scontrol node line %d: no NodeName", n)
		}
		node := Node{
			Name:       kv["NodeName"],
			State:      strings.ToUpper(kv["State"]),
			Reason:     reasonStampRE.ReplaceAllString(nullable(kv["Reason"]), ""),
			Partitions: splitList(kv["Partitions"]),
			Features:   splitList(kv["AvailableFeatures"]),
			GPUs:       ParseGPUs(kv["CfgTRES"]),
		}
		if node.GPUs == 0 {
			node.GPUs = ParseGPUs(kv["Gres"])
		}
		nodes = append(nodes, node)
		return nil
	})
	return nodes, err
}

func splitList(s string) []string {
	s = nullable(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// eachLine calls fn for every non-empty line of r, bounding line length.
func eachLine(r io.Reader, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !isText(sc.Bytes()) {
			return fmt.Errorf("line %d: binary data", n)
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: longer than %d bytes", n+1, MaxLine)
		}
		return fmt.Errorf("read slurm output: %w", err)
	}
	return nil
}

func isText(b []byte) bool { return bytes.IndexByte(b, 0) < 0 }
