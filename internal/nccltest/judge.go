package nccltest

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Status is the verdict on one nccl-tests run.
type Status string

// The verdicts Judge gives.
const (
	// StatusPass means the run completed, data was correct and bandwidth met
	// the threshold (or no threshold applies).
	StatusPass Status = "pass"
	// StatusFail means the run shows a fault of the nodes under test:
	// corrupted data, an NCCL/CUDA failure or bandwidth below threshold.
	StatusFail Status = "fail"
	// StatusCheckError means the run says nothing reliable about the nodes:
	// it was cut short, hung, could not start or was misconfigured.
	StatusCheckError Status = "check_error"
	// StatusNotTested means the test never started because Slurm could not
	// give it the nodes at once (they run other jobs): nothing is known
	// about them, and nothing broke.
	StatusNotTested Status = "not_tested"
)

// Statistic selects how the large-message bus bandwidth is summarised.
type Statistic string

// The statistics Judge supports.
const (
	// StatMax takes the best large-message row.
	StatMax Statistic = "max"
	// StatMedian takes the median of the large-message rows.
	StatMedian Statistic = "median"
)

// GiB is 2^30 bytes, the default size from which rows count as large.
const GiB = int64(1) << 30

// Criteria says what a healthy run looks like.
type Criteria struct {
	// ExpectedRanks is the number of ranks the launch asked for; 0 skips the
	// check. A run with fewer ranks (for example every process running its
	// own 1-rank test) is a misconfigured check, never a pass.
	ExpectedRanks int
	// MinBusBW is the bus bandwidth threshold in GB/s; 0 skips it.
	MinBusBW float64
	// LargeBytes is the message size from which rows are judged; 0 means GiB.
	// Without such rows the two largest sizes in the table are used.
	LargeBytes int64
	// Statistic summarises the large rows; "" means StatMax.
	Statistic Statistic
}

// Verdict is Judge's conclusion about one run.
type Verdict struct {
	// Status is pass, fail or check_error.
	Status Status `json:"status"`
	// Kind names the main finding: "corruption", "nccl-error",
	// "low-bandwidth", "truncated", "misconfigured", "no-data" or "".
	Kind string `json:"kind,omitempty"`
	// Reasons explains the verdict in short sentences.
	Reasons []string `json:"reasons,omitempty"`
	// BusBW is the summarised large-message bus bandwidth in GB/s.
	BusBW float64 `json:"busbw_gbps"`
	// BusBWBytes is the smallest message size the summary covered.
	BusBWBytes int64 `json:"busbw_from_bytes,omitempty"`
	// Threshold is the bandwidth threshold applied, 0 when none.
	Threshold float64 `json:"threshold_gbps,omitempty"`
	// FailedHosts lists the hosts that failure lines name.
	FailedHosts []string `json:"failed_hosts,omitempty"`
}

// Detail is a one-line summary suitable for a node drain reason.
func (v Verdict) Detail() string {
	if len(v.Reasons) == 0 {
		return string(v.Status)
	}
	return v.Reasons[0]
}

// Judge decides whether a parsed run passes the criteria.
func Judge(res *Result, c Criteria) Verdict {
	v := Verdict{FailedHosts: res.FailedHosts()}
	v.BusBW, v.BusBWBytes = LargeMessageBusBW(res.Rows, c.LargeBytes, c.Statistic)
	switch {
	case res.Outcome == OutcomeFailed:
		v.Status = StatusFail
		v.Kind = "nccl-error"
		for _, f := range res.Failures {
			if f.Kind == "corruption" || f.Kind == "out-of-bounds" {
				v.Kind = "corruption"
			}
		}
		v.Reasons = append(v.Reasons, failureSummary(res))
		return v
	case c.ExpectedRanks > 0 && res.Ranks > 0 && res.Ranks != c.ExpectedRanks:
		v.Status, v.Kind = StatusCheckError, "misconfigured"
		v.Reasons = append(v.Reasons, fmt.Sprintf("test ran with %d ranks, %d requested (nccl-tests built without MPI, or a launcher mismatch)", res.Ranks, c.ExpectedRanks))
		return v
	case res.Outcome == OutcomeTruncated:
		v.Status, v.Kind = StatusCheckError, "truncated"
		v.Reasons = append(v.Reasons, fmt.Sprintf("output ends before the bandwidth footer after %d rows (hang, kill or crash)", len(res.Rows)))
		return v
	case len(res.Rows) == 0:
		v.Status, v.Kind = StatusCheckError, "no-data"
		v.Reasons = append(v.Reasons, "no size table in the output")
		return v
	}
	v.Status = StatusPass
	if res.Ranks == 1 {
		// One rank moves no data between GPUs: bus bandwidth is not
		// applicable, and a launch meant for several ranks went wrong.
		if c.ExpectedRanks != 1 {
			v.Status, v.Kind = StatusCheckError, "misconfigured"
			v.Reasons = append(v.Reasons, "test ran as a single rank: bus bandwidth not applicable (nccl-tests built without MPI, or one GPU)")
			return v
		}
		v.Reasons = append(v.Reasons, "single rank: data checked, bandwidth not applicable")
		return v
	}
	if c.MinBusBW > 0 {
		v.Threshold = c.MinBusBW
		if v.BusBW < c.MinBusBW {
			v.Status, v.Kind = StatusFail, "low-bandwidth"
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s busbw %.1f GB/s below %.1f GB/s (messages >= %s)", orUnknown(res.Collective), v.BusBW, c.MinBusBW, formatBytes(v.BusBWBytes)))
			return v
		}
	}
	v.Reasons = append(v.Reasons, fmt.Sprintf("%s busbw %.1f GB/s", orUnknown(res.Collective), v.BusBW))
	return v
}

// LargeMessageBusBW summarises the bus bandwidth of the rows at or above
// large bytes (GiB when 0), taking the better of out-of-place and in-place
// per row so a single dip does not decide. Without such rows it uses the two
// largest sizes present. It returns the figure and the smallest size used.
func LargeMessageBusBW(rows []Row, large int64, stat Statistic) (float64, int64) {
	if len(rows) == 0 {
		return 0, 0
	}
	if large <= 0 {
		large = GiB
	}
	sizes := map[int64]bool{}
	for _, r := range rows {
		sizes[r.Bytes] = true
	}
	from := large
	if !hasAtLeast(sizes, large) {
		ordered := make([]int64, 0, len(sizes))
		for s := range sizes {
			ordered = append(ordered, s)
		}
		sort.Slice(ordered, func(i, j int) bool { return ordered[i] > ordered[j] })
		from = ordered[min(1, len(ordered)-1)]
	}
	var vals []float64
	for _, r := range rows {
		if r.Bytes >= from {
			vals = append(vals, math.Max(r.OutOfPlace.BusBW, r.InPlace.BusBW))
		}
	}
	sort.Float64s(vals)
	if stat == StatMedian {
		n := len(vals)
		if n%2 == 1 {
			return vals[n/2], from
		}
		return (vals[n/2-1] + vals[n/2]) / 2, from
	}
	return vals[len(vals)-1], from
}

func hasAtLeast(sizes map[int64]bool, large int64) bool {
	for s := range sizes {
		if s >= large {
			return true
		}
	}
	return false
}

func failureSummary(res *Result) string {
	if len(res.Failures) == 0 {
		return "nccl-tests failed"
	}
	f := res.Failures[0]
	for _, e := range res.Failures {
		// Prefer the line that says what went wrong over unwinds and banners.
		if e.Kind == "nccl-failure" || e.Kind == "cuda-failure" || e.Kind == "corruption" || e.Kind == "out-of-bounds" || e.Kind == "nccl-error" {
			f = e
			break
		}
	}
	text := f.Text
	if len(text) > 160 {
		text = text[:160] + "..."
	}
	return fmt.Sprintf("%s: %s", f.Kind, strings.TrimSpace(text))
}

func orUnknown(s string) string {
	if s == "" {
		return "collective"
	}
	return s
}

func formatBytes(n int64) string {
	switch {
	case n >= GiB && n%GiB == 0:
		return fmt.Sprintf("%dG", n/GiB)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	default:
		return fmt.Sprintf("%dB", n)
	}
}
