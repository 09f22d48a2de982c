package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// ExpandStdioPattern expands the filename patterns sbatch accepts for
// --output/--error, for the given job: %j and %J (job id, or for array tasks
// the task's own id), %A (array master id, else job id), %a (array task id),
// %u (user), %x (job name), %N (first node), %n and %t (0, the node and task
// of the batch step), %% (a percent sign). A number after % pads with zeros
// ("%4j"). Unknown specifiers are kept as written. An empty pattern gives
// Slurm's default, "slurm-%j.out" (or "slurm-%A_%a.out" for array tasks),
// relative to the job's WorkDir.
func ExpandStdioPattern(pattern string, j Job) string {
	if pattern == "" {
		pattern = "slurm-%j.out"
		if j.ArrayTaskID != "" {
			pattern = "slurm-%A_%a.out"
		}
		if j.WorkDir != "" {
			pattern = strings.TrimSuffix(j.WorkDir, "/") + "/" + pattern
		}
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' || i+1 >= len(pattern) {
			b.WriteByte(c)
			continue
		}
		k := i + 1
		for k < len(pattern) && k-i <= 2 && pattern[k] >= '0' && pattern[k] <= '9' {
			k++
		}
		if k >= len(pattern) {
			b.WriteString(pattern[i:])
			break
		}
		width := 0
		if k > i+1 {
			width, _ = strconv.Atoi(pattern[i+1 : k])
		}
		value, ok := stdioValue(pattern[k], j)
		if !ok {
			b.WriteString(pattern[i : k+1])
		} else {
			b.WriteString(pad(value, width))
		}
		i = k
	}
	return b.String()
}

func stdioValue(spec byte, j Job) (string, bool) {
	switch spec {
	case '%':
		return "%", true
	case 'j', 'J':
		return j.ID, true
	case 'A':
		if j.ArrayJobID != "" {
			return j.ArrayJobID, true
		}
		return j.ID, true
	case 'a':
		if j.ArrayTaskID == "" {
			return "4294967294", true // what Slurm writes for a job that is not an array task
		}
		return j.ArrayTaskID, true
	case 'u':
		return j.User, true
	case 'x':
		return j.Name, true
	case 'N':
		if len(j.Nodes) > 0 {
			return j.Nodes[0], true
		}
		first, _, _ := strings.Cut(j.NodeList, ",")
		return first, true
	case 'n', 't':
		return "0", true
	}
	return "", false
}

// pad left-pads numeric values with zeros to width.
func pad(v string, width int) string {
	if width <= len(v) {
		return v
	}
	if _, err := strconv.ParseUint(v, 10, 64); err != nil {
		return v
	}
	return fmt.Sprintf("%0*s", width, v)
}
