package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/xid"
)

// Severity grades one finding.
type Severity string

// The severities, from harmless to failing.
const (
	SevOK          Severity = "ok"
	SevUnavailable Severity = "unavailable"
	SevWarn        Severity = "warn"
	SevFail        Severity = "fail"
)

// Finding is the result of one check, on one GPU or on the node (GPU -1).
type Finding struct {
	GPU      int      `json:"gpu"`
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	Detail   string   `json:"detail"`
}

// CheckOptions tunes Check.
type CheckOptions struct {
	// ExpectedGPUs is the number of GPUs the node should have; 0 skips the
	// count check.
	ExpectedGPUs int
	// XidWait is how long to listen for Xid events; 0 skips listening.
	XidWait time.Duration
	// MaxTempC fails a GPU hotter than this; 0 disables the check (throttle
	// reasons still apply).
	MaxTempC int
	// NVLinkErrorLimit warns when a link's replay, recovery or CRC counters
	// together exceed it; 0 means 1000.
	NVLinkErrorLimit uint64
}

// Report is the outcome of Check.
type Report struct {
	// Available is false when NVML could not be used; Reason says why.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// Driver is the driver version.
	Driver string `json:"driver,omitempty"`
	// GPUs is the number of GPUs found.
	GPUs int `json:"gpus"`
	// Models lists the product name per GPU index.
	Models []string `json:"models,omitempty"`
	// Findings lists every check result.
	Findings []Finding `json:"findings"`
	// Xids lists Xid events seen while listening.
	Xids []XidEvent `json:"xids,omitempty"`
}

// Failed reports whether any finding failed.
func (r Report) Failed() bool { return r.worst() == SevFail }

func (r Report) worst() Severity {
	rank := map[Severity]int{SevOK: 0, SevUnavailable: 1, SevWarn: 2, SevFail: 3}
	w := SevOK
	for _, f := range r.Findings {
		if rank[f.Severity] > rank[w] {
			w = f.Severity
		}
	}
	return w
}

// Failures returns the failing findings.
func (r Report) Failures() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Severity == SevFail {
			out = append(out, f)
		}
	}
	return out
}

// Check runs the fast NVML checks on every GPU: count, uncorrectable ECC,
// retired pages and remapped rows, NVLink state and errors, temperature and
// throttling, PCIe link width and generation, and Xid events within
// opts.XidWait. When NVML is unavailable (no driver, no GPU) the report
// says so and contains no failure, even when opts.ExpectedGPUs says the
// node should have GPUs: without NVML there is no trusted evidence.
func Check(ctx context.Context, m Manager, opts CheckOptions) Report {
	var r Report
	devs, err := m.Devices()
	if err == nil && len(devs) == 0 {
		err = fmt.Errorf("%w: the driver reports no GPU", ErrUnavailable)
	}
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			r.Reason = strings.TrimPrefix(err.Error(), ErrUnavailable.Error()+": ")
			f := Finding{GPU: -1, Check: "nvml", Severity: SevUnavailable, Detail: err.Error()}
			if opts.ExpectedGPUs > 0 {
				// Slurm's gres count alone cannot tell a broken driver from
				// a node without one (a test or CPU-only host declaring
				// gpu:N), so this is reported, never failed: a drain needs
				// evidence from NVML itself.
				f.Detail = fmt.Sprintf("%d GPUs expected, not checked: %v", opts.ExpectedGPUs, err)
			}
			r.Findings = append(r.Findings, f)
			return r
		}
		r.Available = true
		r.Findings = append(r.Findings, Finding{GPU: -1, Check: "nvml", Severity: SevFail, Detail: fmt.Sprintf("list GPUs: %v", err)})
		return r
	}
	r.Available = true
	r.Driver, _ = m.DriverVersion()
	r.GPUs = len(devs)
	count := Finding{GPU: -1, Check: "gpu-count", Severity: SevOK, Detail: fmt.Sprintf("%d GPUs", len(devs))}
	if opts.ExpectedGPUs > 0 && len(devs) != opts.ExpectedGPUs {
		count.Severity, count.Detail = SevFail, fmt.Sprintf("%d GPUs visible, %d expected", len(devs), opts.ExpectedGPUs)
	}
	r.Findings = append(r.Findings, count)
	for _, d := range devs {
		r.Models = append(r.Models, d.Name())
		r.Findings = append(r.Findings, checkDevice(d, opts)...)
	}
	if opts.XidWait > 0 {
		evs, err := m.WaitXid(ctx, opts.XidWait)
		r.Xids = evs
		r.Findings = append(r.Findings, xidFindings(evs, err)...)
	}
	return r
}

// checkDevice runs the per-GPU checks. A query the GPU does not support is
// skipped; any other query error fails the check, since a GPU that cannot
// answer NVML is itself suspect.
func checkDevice(d Device, opts CheckOptions) []Finding {
	var out []Finding
	add := func(check string, sev Severity, format string, args ...any) {
		out = append(out, Finding{GPU: d.Index(), Check: check, Severity: sev, Detail: fmt.Sprintf(format, args...)})
	}
	queryFailed := func(check string, err error) bool {
		if err == nil {
			return false
		}
		if !errors.Is(err, ErrNotSupported) {
			add(check, SevFail, "query failed: %v", err)
		}
		return true
	}

	if ecc, err := d.ECC(); !queryFailed("ecc", err) {
		switch {
		case ecc.Volatile > 0:
			add("ecc", SevFail, "%d uncorrectable ECC errors since driver load (%d lifetime)", ecc.Volatile, ecc.Aggregate)
		case ecc.Aggregate > 0:
			add("ecc", SevWarn, "%d uncorrectable ECC errors over the GPU's lifetime", ecc.Aggregate)
		default:
			add("ecc", SevOK, "no uncorrectable ECC errors")
		}
	}
	if rows, err := d.RemappedRows(); !queryFailed("row-remap", err) {
		switch {
		case rows.Failed:
			add("row-remap", SevFail, "row remapping failed (%d uncorrectable rows): replace the GPU", rows.Uncorrectable)
		case rows.Pending:
			add("row-remap", SevFail, "row remapping pending: reset the GPU to activate")
		default:
			add("row-remap", SevOK, "%d correctable, %d uncorrectable rows remapped", rows.Correctable, rows.Uncorrectable)
		}
	} else if pages, err := d.RetiredPages(); !queryFailed("retired-pages", err) {
		if pages.Pending {
			add("retired-pages", SevFail, "page retirement pending (%d double-bit pages): reset the GPU", pages.DoubleBit)
		} else {
			add("retired-pages", SevOK, "%d double-bit pages retired", pages.DoubleBit)
		}
	}
	if links, err := d.NVLinks(); !queryFailed("nvlink", err) && len(links) > 0 {
		out = append(out, nvlinkFindings(d.Index(), links, opts.NVLinkErrorLimit)...)
	}
	if th, err := d.Thermal(); !queryFailed("thermal", err) {
		var reasons []string
		for _, r := range []struct {
			bit  uint64
			name string
		}{{ThrottleHWSlowdown, "HW slowdown"}, {ThrottleHWThermal, "HW thermal slowdown"}, {ThrottleSWThermal, "SW thermal slowdown"}, {ThrottlePowerBrake, "power brake"}} {
			if th.Throttle&r.bit != 0 {
				reasons = append(reasons, r.name)
			}
		}
		switch {
		case opts.MaxTempC > 0 && th.TempC > opts.MaxTempC:
			add("thermal", SevFail, "%d C above %d C", th.TempC, opts.MaxTempC)
		case th.Throttle&(ThrottleHWSlowdown|ThrottleHWThermal|ThrottlePowerBrake) != 0:
			add("thermal", SevFail, "%d C, clocks throttled: %s", th.TempC, strings.Join(reasons, ", "))
		case len(reasons) > 0:
			add("thermal", SevWarn, "%d C, clocks throttled: %s", th.TempC, strings.Join(reasons, ", "))
		default:
			add("thermal", SevOK, "%d C", th.TempC)
		}
	}
	if p, err := d.PCIe(); !queryFailed("pcie", err) {
		switch {
		case p.MaxWidth > 0 && p.CurWidth < p.MaxWidth:
			add("pcie", SevFail, "PCIe link x%d, capable of x%d", p.CurWidth, p.MaxWidth)
		case p.MaxGen > 0 && p.CurGen < p.MaxGen:
			// Links train down at idle to save power; only the width is
			// a reliable fault signal without load, so this is no finding.
			add("pcie", SevOK, "PCIe gen %d x%d, capable of gen %d (links slow down at idle)", p.CurGen, p.CurWidth, p.MaxGen)
		default:
			add("pcie", SevOK, "PCIe gen %d x%d", p.CurGen, p.CurWidth)
		}
	}
	return out
}

func nvlinkFindings(gpu int, links []NVLink, limit uint64) []Finding {
	if limit == 0 {
		limit = 1000
	}
	var down, noisy []string
	active := 0
	for _, l := range links {
		if !l.Active {
			down = append(down, fmt.Sprint(l.Link))
			continue
		}
		active++
		if l.Replay+l.Recovery+l.CRCFlit+l.CRCData > limit {
			noisy = append(noisy, fmt.Sprintf("%d (replay %d, recovery %d, crc %d)", l.Link, l.Replay, l.Recovery, l.CRCFlit+l.CRCData))
		}
	}
	var out []Finding
	switch {
	case len(down) > 0 && active > 0:
		out = append(out, Finding{GPU: gpu, Check: "nvlink", Severity: SevFail, Detail: fmt.Sprintf("links down: %s (%d active)", strings.Join(down, ","), active)})
	case len(down) > 0:
		// Every link inactive: the GPU is not NVLink-connected (PCIe card)
		// or the fabric is not up yet; not a per-GPU fault.
		out = append(out, Finding{GPU: gpu, Check: "nvlink", Severity: SevWarn, Detail: "no active NVLink"})
	default:
		out = append(out, Finding{GPU: gpu, Check: "nvlink", Severity: SevOK, Detail: fmt.Sprintf("%d links active", active)})
	}
	if len(noisy) > 0 {
		out = append(out, Finding{GPU: gpu, Check: "nvlink-errors", Severity: SevWarn, Detail: "error counters high on links " + strings.Join(noisy, "; ")})
	}
	return out
}

func xidFindings(evs []XidEvent, err error) []Finding {
	if err != nil && len(evs) == 0 {
		sev := SevWarn
		if errors.Is(err, ErrNotSupported) || errors.Is(err, ErrUnavailable) {
			sev = SevUnavailable
		}
		return []Finding{{GPU: -1, Check: "xid", Severity: sev, Detail: fmt.Sprintf("cannot listen for Xid events: %v", err)}}
	}
	if len(evs) == 0 {
		return []Finding{{GPU: -1, Check: "xid", Severity: SevOK, Detail: "no Xid events"}}
	}
	var out []Finding
	for _, e := range evs {
		info := xid.Lookup(e.Xid)
		sev := SevWarn
		switch info.Action {
		case xid.ActionDrain:
			sev = SevFail
		case xid.ActionIgnore:
			sev = SevOK
		}
		out = append(out, Finding{GPU: e.Device, Check: "xid", Severity: sev, Detail: fmt.Sprintf("Xid %d %s: %s", e.Xid, info.Name, info.Meaning)})
	}
	return out
}
