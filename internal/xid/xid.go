// Package xid reads NVIDIA Xid error reports from kernel log text and tells
// what each Xid code means for a node: nothing, the job's own fault, or a
// GPU that must be drained and reset.
package xid

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/schedmate/schedmate/internal/lazyre"
	"github.com/schedmate/schedmate/internal/logtext"
)

// Action is what an Xid calls for on the node.
type Action string

// The actions, from least to most severe.
const (
	// ActionIgnore: informational, the GPU stays healthy.
	ActionIgnore Action = "ignore"
	// ActionJob: usually the application's own fault; restart the job, do
	// not drain on one event.
	ActionJob Action = "job"
	// ActionSoftDrain: reset the GPU when convenient (drain after the
	// running jobs end).
	ActionSoftDrain Action = "soft-drain"
	// ActionDrain: drain now and reset the GPU or reboot the node.
	ActionDrain Action = "drain"
)

// Info describes one Xid code.
type Info struct {
	// Code is the Xid number.
	Code int `json:"code"`
	// Name is NVIDIA's mnemonic or a short name.
	Name string `json:"name"`
	// Meaning is a short description.
	Meaning string `json:"meaning"`
	// Action is what the node needs.
	Action Action `json:"action"`
}

// table follows NVIDIA's Xid catalog resolution buckets (RESTART_APP ->
// job, RESET_GPU/RESTART_BM -> drain, contained errors -> soft drain).
var table = map[int]Info{
	8:   {8, "GPU_STOPPED_PROCESSING", "GPU stopped processing (timeout)", ActionJob},
	13:  {13, "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics engine exception (usually an application fault)", ActionJob},
	31:  {31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault (usually an application fault)", ActionJob},
	32:  {32, "PBDMA_ERROR", "Invalid or corrupted push buffer stream", ActionJob},
	43:  {43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing after an application fault", ActionIgnore},
	45:  {45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup after earlier errors or process kill", ActionIgnore},
	48:  {48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double-bit ECC error", ActionDrain},
	61:  {61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint", ActionDrain},
	62:  {62, "PMU_HALT_ERROR", "Internal micro-controller halt", ActionDrain},
	63:  {63, "INFOROM_DRAM_RETIREMENT_EVENT", "Row remapping or page retirement event (takes effect after reset)", ActionSoftDrain},
	64:  {64, "INFOROM_DRAM_RETIREMENT_FAILURE", "Row remapping or page retirement failure", ActionDrain},
	68:  {68, "NVDEC0_EXCEPTION", "Video decoder exception", ActionJob},
	69:  {69, "GR_CLASS_ERROR", "Graphics engine class error", ActionJob},
	74:  {74, "NVLINK_ERROR", "NVLink error", ActionDrain},
	79:  {79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", ActionDrain},
	92:  {92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", ActionIgnore},
	94:  {94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error (reset the GPU when convenient)", ActionSoftDrain},
	95:  {95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", ActionDrain},
	109: {109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context switch timeout", ActionDrain},
	119: {119, "GSP_RPC_TIMEOUT", "GSP RPC timeout", ActionDrain},
	120: {120, "GSP_ERROR", "GSP error", ActionDrain},
	121: {121, "C2C_ERROR", "Chip-to-chip link error", ActionDrain},
	140: {140, "ECC_UNRECOVERABLE_ERROR", "Unrecoverable ECC error", ActionDrain},
	143: {143, "GPU_INIT_FAILURE", "GPU initialisation failure", ActionDrain},
	154: {154, "GPU_RECOVERY_ACTION_CHANGED", "GPU recovery action changed (follow the reported action)", ActionIgnore},
}

// Lookup returns what code means. Unknown codes are reported as needing a
// drain only when they fall in NVIDIA's NVLink5 range (144-150); otherwise
// they are attributed to the job.
func Lookup(code int) Info {
	if info, ok := table[code]; ok {
		return info
	}
	if code >= 144 && code <= 150 {
		return Info{code, "NVLINK5_ERROR", "NVLink5 error (fatal when the message says so)", ActionSoftDrain}
	}
	return Info{code, "UNKNOWN", "Xid not in the table", ActionJob}
}

// Event is one Xid report from a kernel log.
type Event struct {
	// Line is the 1-based input line.
	Line int `json:"line"`
	// PCI is the bus id in the report ("0000:a1:00"), "" when absent.
	PCI string `json:"pci"`
	// Code is the Xid number.
	Code int `json:"xid"`
	// PID is the process id, 0 when unknown or absent.
	PID int `json:"pid,omitempty"`
	// Process is the process name, "" when unknown or absent.
	Process string `json:"process,omitempty"`
	// Message is the text after the code and process fields.
	Message string `json:"message"`
	// CausedBy is the earlier Xid that an Xid 45 names, 0 when none.
	CausedBy int `json:"caused_by,omitempty"`
}

// Action is what the event calls for. An Xid 45 that names its cause takes
// the cause's action; NVLink5 reports that say "Nonfatal" are ignored and
// ones that say "Fatal" drain.
func (e Event) Action() Action {
	if e.Code == 45 && e.CausedBy != 0 {
		return Lookup(e.CausedBy).Action
	}
	if e.Code >= 144 && e.Code <= 150 {
		switch {
		case strings.Contains(e.Message, "Nonfatal"):
			return ActionIgnore
		case strings.Contains(e.Message, "Fatal"):
			return ActionDrain
		}
	}
	return Lookup(e.Code).Action
}

var (
	reXid      = lazyre.New(`NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)(?: [^)]*)?\): (\d+),\s*(.*)$`)
	rePID      = lazyre.New(`^pid='?(<unknown>|\d+)'?,\s*`)
	reName     = lazyre.New(`^name=([^,]*),\s*`)
	reCausedBy = lazyre.New(`caused by previous Xid (\d+)`)
	// reXidShort is the short form NVIDIA documents for page retirement
	// ("XID 63 Dynamic Page Retirement: ..."), without a PCI address.
	reXidShort = lazyre.New(`\bXID (\d+):? ([A-Z].*?)["”]?$`)
)

// ParseLine reads one kernel log line and reports whether it is an Xid.
// Timestamps, syslog prefixes, quoting and diff markers around the
// "NVRM: Xid (PCI:...): N, ..." text are ignored; the short documented form
// "XID 63 Dynamic Page Retirement: ..." is read too, with an empty PCI.
func ParseLine(line string) (Event, bool) {
	m := reXid().FindStringSubmatch(line)
	if m == nil {
		s := reXidShort().FindStringSubmatch(line)
		if s == nil {
			return Event{}, false
		}
		m = []string{s[0], "", s[1], s[2]}
	}
	code, err := strconv.Atoi(m[2])
	if err != nil || code <= 0 || code > 10000 {
		return Event{}, false
	}
	e := Event{PCI: strings.ToLower(m[1]), Code: code}
	rest := m[3]
	if p := rePID().FindStringSubmatch(rest); p != nil {
		e.PID, _ = strconv.Atoi(p[1])
		rest = rest[len(p[0]):]
	}
	if n := reName().FindStringSubmatch(rest); n != nil {
		if n[1] != "<unknown>" {
			e.Process = n[1]
		}
		rest = rest[len(n[0]):]
	}
	e.Message = strings.TrimRight(strings.TrimSpace(rest), `"`)
	if c := reCausedBy().FindStringSubmatch(e.Message); c != nil {
		e.CausedBy, _ = strconv.Atoi(c[1])
	}
	return e, true
}

// MaxEvents bounds how many events Scan returns.
const MaxEvents = 10000

// ErrBinary reports input that is not text.
var ErrBinary = errors.New("kernel log looks binary")

// Scan reads kernel log text and returns its Xid events in order, at most
// MaxEvents; memory use is bounded whatever the input size.
func Scan(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var out []Event
	n := 0
	for sc.Scan() {
		n++
		raw := sc.Bytes()
		if n == 1 && strings.IndexByte(string(raw), 0) >= 0 {
			return nil, ErrBinary
		}
		line := logtext.Clean(raw)
		if !strings.Contains(line, "Xid") && !strings.Contains(line, "XID") {
			continue
		}
		if e, ok := ParseLine(line); ok && len(out) < MaxEvents {
			e.Line = n
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read kernel log: %w", err)
	}
	return out, nil
}
