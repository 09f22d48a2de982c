package slurm

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses Slurm durations: "[D-]HH:MM:SS", "MM:SS", "M",
// "D-HH", "D-HH:MM", with optional fractional seconds. "UNLIMITED",
// "INFINITE", "Partition_Limit", "Unknown", "None", "N/A" and "" give zero.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch strings.ToUpper(s) {
	case "", "UNLIMITED", "INFINITE", "PARTITION_LIMIT", "UNKNOWN", "NONE", "N/A", "(NULL)":
		return 0, nil
	}
	var days int64
	rest := s
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.ParseInt(d, 10, 32)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("parse duration %q: bad days", s)
		}
		days, rest = n, r
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 || rest == "" {
		return 0, fmt.Errorf("parse duration %q: bad format", s)
	}
	var nums [3]float64
	for i, p := range parts {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v < 0 || v > 1e9 || (i < len(parts)-1 && strings.Contains(p, ".")) {
			return 0, fmt.Errorf("parse duration %q: bad number %q", s, p)
		}
		nums[i] = v
	}
	var h, m, sec float64
	switch {
	case len(parts) == 3:
		h, m, sec = nums[0], nums[1], nums[2]
	case days > 0 && len(parts) == 2: // D-HH:MM
		h, m = nums[0], nums[1]
	case days > 0: // D-HH
		h = nums[0]
	case len(parts) == 2: // MM:SS
		m, sec = nums[0], nums[1]
	default: // minutes
		m = nums[0]
	}
	total := float64(days)*86400 + h*3600 + m*60 + sec
	if total > maxDurationS {
		return 0, fmt.Errorf("parse duration %q: out of range", s)
	}
	return time.Duration(total * float64(time.Second)), nil
}

// maxDurationS bounds parsed durations (about 100 years).
const maxDurationS = 100 * 366 * 86400

// FormatMinutes renders d as whole minutes, rounded up, for sbatch --time.
func FormatMinutes(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Minute-1)/time.Minute), 10)
}

// ParseTime parses a Slurm timestamp ("2006-01-02T15:04:05", local time).
// "Unknown", "None", "N/A", "0" and "" give the zero time.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch strings.ToUpper(s) {
	case "", "UNKNOWN", "NONE", "N/A", "0", "(NULL)":
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, time.Local)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse time %q: %w", s, err)
	}
	return t, nil
}

// NormalizeState turns "CANCELLED by 0" into "CANCELLED" and trims flags
// such as "COMPLETING+" suffix markers; node states like "IDLE+DRAIN" keep their flags.
func NormalizeState(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, " "); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(strings.ToUpper(s), "+")
}

// ParseExitCode parses "code:signal" as shown by sacct and scontrol.
func ParseExitCode(s string) (code, signal int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, nil
	}
	c, sig, _ := strings.Cut(s, ":")
	if code, err = strconv.Atoi(c); err != nil {
		return 0, 0, fmt.Errorf("parse exit code %q: %w", s, err)
	}
	if sig != "" {
		if signal, err = strconv.Atoi(sig); err != nil {
			return 0, 0, fmt.Errorf("parse exit code %q: %w", s, err)
		}
	}
	return code, signal, nil
}

// ParseGPUs counts GPUs in a TRES or GRES string: "gres/gpu=2" (TRES lists,
// where a plain gres/gpu entry wins over typed ones), "gpu:2", "gpu:a100:2",
// "gres:gpu:2", "gres/gpu:a100=2", "gpu:4(S:0-1)", "gpu" (one). Other
// resources are ignored; nothing found gives 0.
func ParseGPUs(s string) int {
	var plain, typed int
	plainSeen := false
	for _, item := range splitTRES(s) {
		item = strings.TrimSpace(item)
		if i := strings.IndexByte(item, '('); i >= 0 {
			item = item[:i]
		}
		item = strings.TrimPrefix(strings.TrimPrefix(item, "gres/"), "gres:")
		name, count, hasEq := strings.Cut(item, "=")
		if hasEq { // TRES form: gpu=2 or gpu:a100=2
			kind, _, isTyped := strings.Cut(name, ":")
			if kind != "gpu" {
				continue
			}
			n := atoiNonNeg(count)
			if isTyped {
				typed += n
			} else {
				plain, plainSeen = plain+n, true
			}
			continue
		}
		fields := strings.Split(item, ":")
		if fields[0] != "gpu" {
			continue
		}
		switch len(fields) {
		case 1:
			plain, plainSeen = plain+1, true
		default:
			n := atoiNonNeg(fields[len(fields)-1])
			if len(fields) == 2 && n == 0 && fields[1] != "0" {
				n = 1 // "gpu:a100" means one GPU of that type
			}
			plain, plainSeen = plain+n, true
		}
	}
	if plainSeen {
		return plain
	}
	return typed
}

// splitTRES splits a comma list, keeping commas inside parentheses.
func splitTRES(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth <= 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// atoiNonNeg parses a count, with K/M suffixes; anything else is 0.
func atoiNonNeg(s string) int {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		s, mult = strings.TrimSuffix(s, "K"), 1024
	case strings.HasSuffix(s, "M"):
		s, mult = strings.TrimSuffix(s, "M"), 1024*1024
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 1<<20 {
		return 0
	}
	return n * mult
}

// nullable maps Slurm's placeholders for "no value" to "".
func nullable(s string) string {
	switch s {
	case "(null)", "N/A", "None assigned", "(None)":
		return ""
	}
	return s
}

// atoiOr parses an int, giving def when s is not a number.
func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return def
	}
	return n
}
