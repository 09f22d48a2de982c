// Package advisor is schedmate's scheduling advisor: it embeds what a job is
// (fingerprint fields and workload metadata), retrieves similar ended jobs
// from history, and turns them into a duration and resource estimate with a
// labelled fallback chain when nothing similar is known.
package advisor

import (
	"math"
	"strconv"
	"strings"

	"github.com/schedmate/schedmate/internal/vector"
)

// JobInfo is what is known about a job at submit time: the fields that
// describe it, whether read from Slurm, a trace or a static fingerprint.
type JobInfo struct {
	ID          string
	User        string
	Account     string
	Partition   string
	QOS         string
	Name        string
	LogicalName string // program identity; derived from Name when empty
	Class       string // scheduling class or queue
	WorkDir     string
	Command     string // launch command line
	SubmitLine  string
	GitBranch   string
	NumNodes    int
	NumCPUs     int
	GPUs        int
	TimeLimitS  float64
	// Metadata holds workload fields (model, dataset, framework, batch_size,
	// steps, epochs, seq_len, ...) from static extraction.
	Metadata map[string]string
}

// Logical returns the job's logical name: LogicalName, or Name with every run
// of digits replaced by '#', so that run_seed3 and run_seed4 share it.
func (j *JobInfo) Logical() string {
	if j.LogicalName != "" {
		return j.LogicalName
	}
	return LogicalName(j.Name)
}

// LogicalName replaces every run of digits in name by '#'.
func LogicalName(name string) string {
	var b strings.Builder
	inDigits := false
	for _, r := range name {
		if r >= '0' && r <= '9' {
			if !inDigits {
				b.WriteByte('#')
			}
			inDigits = true
			continue
		}
		inDigits = false
		b.WriteRune(r)
	}
	return b.String()
}

// metadataWeights weighs the workload metadata fields in the embedding; other
// metadata keys get defaultMetaWeight.
var metadataWeights = map[string]float32{
	"model":      1.2,
	"dataset":    0.8,
	"framework":  0.4,
	"launcher":   0.3,
	"entry":      0.8,
	"batch_size": 0.4,
	"steps":      0.6,
	"epochs":     0.6,
	"seq_len":    0.4,
	"config":     0.5,
}

const defaultMetaWeight = 0.3

// notEmbedded are metadata keys that travel with a job but are embedded
// through JobInfo fields (command, branch) or not at all (a commit changes
// with every edit and says little about the workload).
var notEmbedded = map[string]bool{MetaCommand: true, MetaGitBranch: true, MetaGitCommit: true}

// Metadata keys the advisor adds to a job's workload metadata so that they
// are kept with its history.
const (
	MetaCommand   = "command"
	MetaGitBranch = "git_branch"
	MetaGitCommit = "git_commit"
)

// Embed returns the job's feature-hashed vector.
func Embed(j *JobInfo) vector.Vec {
	var b vector.Builder
	b.Add("user", j.User, 1)
	if j.LogicalName != "" {
		// a logical name given by the trace is the program's identity
		// (programSlots names these two features)
		b.Add("name", j.Name, 0.8)
		b.Add("logical", j.LogicalName, 3)
	} else {
		// a derived one only says the names differ by numbers
		b.Add("name", j.Name, 2)
		b.Add("logical", j.Logical(), 1)
	}
	b.Add("class", j.Class, 0.4)
	b.Add("account", j.Account, 0.3)
	b.Add("partition", j.Partition, 0.4)
	b.Add("qos", j.QOS, 0.2)
	b.Add("workdir", j.WorkDir, 0.8)
	b.Add("branch", j.GitBranch, 0.3)
	b.AddTokens("command", j.Command, 1)
	b.AddTokens("submit", j.SubmitLine, 0.6)
	b.Add("nodes", bucket(float64(j.NumNodes)), 0.3)
	b.Add("cpus", bucket(float64(j.NumCPUs)), 0.2)
	b.Add("gpus", bucket(float64(j.GPUs)), 0.4)
	b.Add("limit", bucket(j.TimeLimitS), 0.4)
	for k, v := range j.Metadata {
		if notEmbedded[k] {
			continue
		}
		w, ok := metadataWeights[k]
		if !ok {
			w = defaultMetaWeight
		}
		b.Add("meta."+k, strings.ToLower(v), w)
	}
	return b.Vector()
}

// programSlots returns the components of the name features Embed adds for
// a job whose logical name is given.
func programSlots(j *JobInfo) []int {
	return []int{vector.Slot("name", j.Name), vector.Slot("logical", j.LogicalName)}
}

// bucket names the power-of-two range of a positive count; zero gives "".
func bucket(x float64) string {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.Itoa(int(math.Log2(x)))
}
