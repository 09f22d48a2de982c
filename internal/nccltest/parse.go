// Package nccltest parses, runs and judges NVIDIA nccl-tests benchmarks
// (all_reduce_perf and friends) and bisects a failing node set to find the
// nodes at fault.
//
// The parser reads the output as people and launchers actually produce it:
// old and new table layouts, NCCL_DEBUG=INFO noise interleaved with the table,
// launcher prefixes such as "[1,0]<stdout>:", markdown fences, shell prompts,
// duplicated rows from misconfigured launches, and output cut short.
package nccltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/schedmate/schedmate/internal/lazyre"
	"github.com/schedmate/schedmate/internal/logtext"
)

// Outcome is how an nccl-tests run ended, as far as its output shows.
type Outcome string

// The outcomes a parse can report.
const (
	// OutcomeOK means the run reached its bandwidth footer without any
	// failure marker or data corruption.
	OutcomeOK Outcome = "ok"
	// OutcomeFailed means a failure marker, an NCCL error unwind, a launcher
	// abort or corrupted data was seen.
	OutcomeFailed Outcome = "failed"
	// OutcomeTruncated means the output stops before the footer with no
	// failure seen: a hang, a kill or an incomplete paste.
	OutcomeTruncated Outcome = "truncated"
)

// CheckFormat names the validation column layout of the size table.
type CheckFormat string

// The validation column layouts nccl-tests has used.
const (
	// CheckWrong is the newer integer "#wrong" column (count of wrong
	// elements, printed with %g once large).
	CheckWrong CheckFormat = "wrong"
	// CheckError is the older float "error" column (maximum absolute error).
	CheckError CheckFormat = "error"
)

// Limits that keep parsing bounded on hostile or huge input.
const (
	// MaxRows bounds how many table rows are kept.
	MaxRows = 4096
	// MaxEvents bounds how many failure and warning lines are kept.
	MaxEvents = 256
	// maxLine bounds the raw length of one input line.
	maxLine = 1 << 20
)

// Errors returned by Parse for input that is not nccl-tests output.
var (
	// ErrEmpty reports empty input.
	ErrEmpty = errors.New("empty nccl-tests output")
	// ErrBinary reports input that looks like binary data.
	ErrBinary = errors.New("nccl-tests output looks binary")
	// ErrNoOutput reports text that contains no nccl-tests header, table,
	// footer or NCCL message at all.
	ErrNoOutput = errors.New("no nccl-tests output found")
)

// Side is one half (out-of-place or in-place) of a table row.
type Side struct {
	// TimeUS is the time per operation in microseconds.
	TimeUS float64 `json:"time_us"`
	// AlgBW is the algorithm bandwidth in GB/s.
	AlgBW float64 `json:"algbw_gbps"`
	// BusBW is the bus bandwidth in GB/s.
	BusBW float64 `json:"busbw_gbps"`
	// Check is the #wrong count or the error value; nil when the column
	// reads "N/A" (not validated).
	Check *float64 `json:"check"`
}

// Row is one line of the size table.
type Row struct {
	// Bytes is the message size.
	Bytes int64 `json:"size_bytes"`
	// Count is the element count.
	Count int64 `json:"count"`
	// Type is the data type ("float", "uint8", ...).
	Type string `json:"type"`
	// RedOp is the reduction ("sum", "none"); empty in layouts without it.
	RedOp string `json:"redop,omitempty"`
	// Root is the root rank; -1 when none or not printed.
	Root int `json:"root"`
	// OutOfPlace holds the out-of-place measurements.
	OutOfPlace Side `json:"out_of_place"`
	// InPlace holds the in-place measurements.
	InPlace Side `json:"in_place"`
	// Line is the 1-based input line.
	Line int `json:"line"`
}

// RankInfo is one "#  Rank N ... on HOST device D [BUS] MODEL" header line.
type RankInfo struct {
	Rank   int    `json:"rank"`
	Host   string `json:"host"`
	PID    int    `json:"pid"`
	Device int    `json:"device"`
	BusID  string `json:"bus_id"`
	Model  string `json:"model"`
}

// Event is a failure or warning line worth reporting.
type Event struct {
	// Line is the 1-based input line.
	Line int `json:"line"`
	// Kind classifies the line: "nccl-failure", "cuda-failure",
	// "test-failure", "nccl-error", "out-of-bounds", "corruption",
	// "launcher-abort" or "nccl-warn".
	Kind string `json:"kind"`
	// Host is the host the line names, when it names one.
	Host string `json:"host,omitempty"`
	// Text is the cleaned line.
	Text string `json:"text"`
}

// Result is everything Parse learned from one nccl-tests output.
type Result struct {
	// Collective is "all_reduce", "all_gather", ...; "" when the output
	// does not say and the table does not tell.
	Collective string `json:"collective"`
	// Ranks is the number of ranks in the test; 0 when unknown.
	Ranks int `json:"-"`
	// RankInfo lists the rank header lines.
	RankInfo []RankInfo `json:"rank_info,omitempty"`
	// Hosts lists every host the output names, sorted.
	Hosts []string `json:"hosts,omitempty"`
	// GPUModel is the most common device model in the rank lines.
	GPUModel string `json:"gpu_model,omitempty"`
	// Version is the nccl-tests version from its banner, when printed.
	Version string `json:"version,omitempty"`
	// Validation is false when the run disabled checking (-c 0); nil when
	// the header is absent.
	Validation *bool `json:"validation,omitempty"`
	// Format is the validation column layout.
	Format CheckFormat `json:"format,omitempty"`
	// Rows is the size table in input order, duplicates included.
	Rows []Row `json:"rows"`
	// AvgBusBW is the "# Avg bus bandwidth" footer; nil when absent.
	AvgBusBW *float64 `json:"-"`
	// OutOfBounds is the "# Out of bounds values" count; nil when absent.
	OutOfBounds *int `json:"out_of_bounds,omitempty"`
	// Wrong totals the #wrong columns; with the old float "error" column it
	// counts the cells whose error exceeds nccl-tests' tolerance for the type.
	Wrong float64 `json:"wrong"`
	// Failures lists failure markers in input order.
	Failures []Event `json:"failures,omitempty"`
	// Warnings lists NCCL WARN lines that were not followed by an error
	// unwind (for example "Could not find a path for pattern").
	Warnings []Event `json:"warnings,omitempty"`
	// Outcome is how the run ended.
	Outcome Outcome `json:"outcome"`
	// RowsDropped counts table rows beyond MaxRows.
	RowsDropped int `json:"rows_dropped,omitempty"`
}

// MaxBusBW returns the largest out-of-place bus bandwidth in the table, or 0
// when the table is empty.
func (r *Result) MaxBusBW() float64 {
	m := 0.0
	for _, row := range r.Rows {
		m = math.Max(m, row.OutOfPlace.BusBW)
	}
	return m
}

// LauncherOnly reports whether every failure came from the launcher (srun or
// mpirun abort banners) with no nccl-tests output at all: the test never
// ran, so the failure says nothing about the nodes.
func (r *Result) LauncherOnly() bool {
	if len(r.Rows) > 0 || len(r.RankInfo) > 0 || r.AvgBusBW != nil || len(r.Failures) == 0 {
		return false
	}
	for _, f := range r.Failures {
		if f.Kind != "launcher-abort" {
			return false
		}
	}
	return true
}

// FailedHosts returns the hosts named by failure events, sorted.
func (r *Result) FailedHosts() []string {
	set := map[string]bool{}
	for _, e := range r.Failures {
		if e.Host != "" {
			set[e.Host] = true
		}
	}
	return sortedKeys(set)
}

var (
	reRank       = lazyre.New(`^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)
	reStarting   = lazyre.New(`^#\s*Collective test (?:starting|concluded):\s*(\w+?)_perf`)
	rePerfName   = lazyre.New(`\b(all_reduce|all_gather|alltoall|reduce_scatter|sendrecv|broadcast|reduce|gather|scatter|hypercube)_perf(?:_mpi)?\b`)
	reVersion    = lazyre.New(`^#\s*nccl-tests version\s+(\S+)`)
	reOOB        = lazyre.New(`^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?`)
	reAvg        = lazyre.New(`^#\s*Avg bus bandwidth\s*:\s*(\S+)`)
	reNCCLLine   = lazyre.New(`^(?:\[[^\]]*\]\s*)?(\S+?):(\d+):(\d+) \[\d+\] (?:(\S+) )?NCCL (INFO|WARN|ERROR|ABORT) ?(.*)$`)
	reUnwind     = lazyre.New(`^(?:\S+\.(?:cc|cu|h|c|cpp):\d+) -> (\d+)`)
	reNRanks     = lazyre.New(`\bnranks (\d+)\b`)
	reTestFail   = lazyre.New(`(?:^|\s)(?:(\S+): )?Test (NCCL|CUDA) failure\b`)
	reTestFail2  = lazyre.New(`\.\.\s+(\S+) pid (\d+): Test failure\b`)
	reSrunError  = lazyre.New(`^srun: error: (\S+): tasks? [\d,-]+: (?:Exited with exit code [1-9]|Killed|Segmentation|Aborted|Bus error|Terminated)`)
	reAbort      = lazyre.New(`MPI_ABORT was invoked|mpirun noticed that process rank|prterun noticed that process rank|mpirun has exited due to process rank|Primary job\s+terminated normally, but \d+ process(?:es)? returned|ORTE has lost communication|\*\*\* Process received signal \*\*\*|^terminate called after throwing|srun: error: .*(?:Exited with exit code [1-9]|Segmentation|Aborted|Bus error)`)
	knownDTypes  = map[string]int{"int8": 1, "uint8": 1, "char": 1, "int32": 4, "uint32": 4, "int": 4, "int64": 8, "uint64": 8, "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8, "bfloat16": 2, "bf16": 2, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
	knownRedOps  = map[string]bool{"sum": true, "prod": true, "max": true, "min": true, "avg": true, "none": true, "mulsum": true, "premulsum": true}
	integerTypes = map[string]bool{"int8": true, "uint8": true, "char": true, "int32": true, "uint32": true, "int": true, "int64": true, "uint64": true}
)

// parser holds the state of one Parse call.
type parser struct {
	res          Result
	hosts        map[string]bool
	rankSeen     map[int]bool
	models       map[string]int
	maxNRanks    int
	marker       string // collective from the "Collective test starting" banner
	perfName     string // first "<coll>_perf" token anywhere
	headerFormat CheckFormat
	sawHeader    bool           // the "# nThread" line
	sawColumns   bool           // the column header line
	warnPending  map[string]int // host:pid:tid -> index of a WARN not yet resolved
	oldErrOOP    bool           // old-format out-of-place error beyond tolerance
	lineNo       int
	recognised   bool
}

// Parse reads one nccl-tests output and returns what it shows. It returns
// ErrEmpty, ErrBinary or ErrNoOutput (wrapped) for input that is not
// nccl-tests output; memory use is bounded whatever the input size.
func Parse(r io.Reader) (*Result, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(8 << 10)
	if len(head) == 0 {
		return nil, ErrEmpty
	}
	if looksBinary(head) {
		return nil, ErrBinary
	}
	p := &parser{
		hosts:       map[string]bool{},
		rankSeen:    map[int]bool{},
		models:      map[string]int{},
		warnPending: map[string]int{},
	}
	p.res.Rows = []Row{}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	sc.Split(scanLinesBounded)
	for sc.Scan() {
		p.lineNo++
		p.line(logtext.Clean(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read nccl-tests output: %w", err)
	}
	if !p.recognised {
		return nil, ErrNoOutput
	}
	return p.finish(), nil
}

// ParseBytes is Parse over a byte slice.
func ParseBytes(b []byte) (*Result, error) {
	return Parse(bytes.NewReader(b))
}

// scanLinesBounded splits like bufio.ScanLines but cuts lines longer than
// maxLine instead of failing, so one huge line cannot stop the parse.
func scanLinesBounded(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, bytes.TrimSuffix(data[:i], []byte{'\r'}), nil
	}
	if len(data) >= maxLine {
		return len(data), data, nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

func looksBinary(b []byte) bool {
	ctrl := 0
	for _, c := range b {
		if c == 0 {
			return true
		}
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != 0x1b {
			ctrl++
		}
	}
	return ctrl*10 > len(b)
}

// reTimestamp matches a leading log timestamp ("2024-05-01T10:00:00.123Z ",
// "[2024-05-01 10:00:00] ") as kubectl --timestamps, journald exports and
// log collectors add.
var reTimestamp = lazyre.New(`^\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?\s+`)

// stripWrappers removes launcher prefixes, timestamps, markdown quoting and
// fences.
func stripWrappers(line string) string {
	for i := 0; i < 4; i++ {
		t := strings.TrimLeft(line, " \t")
		if len(t) > 20 && t[0] >= '0' && t[0] <= '9' || strings.HasPrefix(t, "[2") || strings.HasPrefix(t, "[1") {
			if loc := reTimestamp().FindStringIndex(t); loc != nil {
				line = t[loc[1]:]
				continue
			}
		}
		switch {
		case strings.HasPrefix(t, "> "), strings.HasPrefix(t, "+> "):
			line = t[strings.IndexByte(t, ' ')+1:]
			continue
		case !strings.Contains(t[:min(len(t), 80)], ":"):
			// No launcher prefix without a colon (table rows have none).
		default:
			// "[1,0]<stdout>:", "[rank3]:", srun -l "12: " and pdsh
			// "gpu07: " prefixes. nccl-tests itself prints "host: Test NCCL
			// failure", whose host must stay for blame.
			prefix, rest := logtext.SplitRankPrefix(t)
			if prefix != "" && (strings.HasPrefix(prefix, "[") || strings.HasSuffix(strings.TrimSpace(prefix), ":")) &&
				!strings.HasPrefix(rest, "Test ") {
				line = rest
				continue
			}
		}
		break
	}
	return line
}

func (p *parser) line(raw string) {
	line := stripWrappers(raw)
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(t, "```") {
		return
	}
	if p.perfName == "" && strings.Contains(t, "_perf") {
		if m := rePerfName().FindStringSubmatch(t); m != nil {
			p.perfName = m[1]
		}
	}
	if strings.HasPrefix(t, "#") {
		p.comment(t)
		return
	}
	if strings.Contains(t, " NCCL ") {
		if m := reNCCLLine().FindStringSubmatch(t); m != nil {
			p.ncclLine(t, m)
			return
		}
	}
	if p.failureLine(t) {
		return
	}
	if p.row(t) {
		return
	}
	if strings.HasPrefix(t, "NCCL version ") {
		p.recognised = true
	}
}

func (p *parser) comment(t string) {
	if m := reRank().FindStringSubmatch(t); m != nil {
		p.recognised = true
		rank, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[2])
		dev, _ := strconv.Atoi(m[4])
		model := strings.TrimSpace(m[6])
		p.hosts[m[3]] = true
		if !p.rankSeen[rank] && len(p.res.RankInfo) < MaxRows {
			p.rankSeen[rank] = true
			p.res.RankInfo = append(p.res.RankInfo, RankInfo{Rank: rank, Host: m[3], PID: pid, Device: dev, BusID: m[5], Model: model})
			if model != "" {
				p.models[model]++
			}
		}
		return
	}
	if m := reStarting().FindStringSubmatch(t); m != nil {
		p.recognised = true
		if p.marker == "" {
			p.marker = m[1]
		}
		return
	}
	if m := reVersion().FindStringSubmatch(t); m != nil {
		p.recognised = true
		p.res.Version = m[1]
		return
	}
	if m := reOOB().FindStringSubmatch(t); m != nil {
		p.recognised = true
		n, _ := strconv.Atoi(m[1])
		p.res.OutOfBounds = &n
		if m[2] == "FAILED" || n > 0 {
			p.addFailure(Event{Line: p.lineNo, Kind: "out-of-bounds", Text: t})
		}
		return
	}
	if m := reAvg().FindStringSubmatch(t); m != nil {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			p.recognised = true
			p.res.AvgBusBW = &v
		}
		return
	}
	body := strings.Fields(strings.TrimLeft(t, "#"))
	if len(body) > 0 && body[0] == "nThread" {
		p.recognised = true
		p.sawHeader = true
		for i := 0; i+1 < len(body); i++ {
			if body[i] == "validation:" {
				v := body[i+1] != "0"
				p.res.Validation = &v
			}
		}
		return
	}
	if len(body) >= 8 && body[0] == "size" && body[1] == "count" {
		p.recognised = true
		p.sawColumns = true
		for _, f := range body {
			switch strings.TrimLeft(f, "#") {
			case "wrong":
				p.headerFormat = CheckWrong
			case "error":
				p.headerFormat = CheckError
			}
		}
	}
}

func (p *parser) ncclLine(t string, m []string) {
	p.recognised = true
	host, key := m[1], m[1]+":"+m[2]+":"+m[3]
	p.hosts[host] = true
	level, msg := m[5], m[6]
	if n := reNRanks().FindStringSubmatch(msg); n != nil {
		if v, err := strconv.Atoi(n[1]); err == nil && v > p.maxNRanks && v < 1<<20 {
			p.maxNRanks = v
		}
	}
	switch level {
	case "WARN", "ERROR", "ABORT":
		p.warnPending[key] = p.addEvent(&p.res.Warnings, Event{Line: p.lineNo, Kind: "nccl-warn", Host: host, Text: t})
	case "INFO":
		u := reUnwind().FindStringSubmatch(msg)
		if u == nil || u[1] == "0" {
			return
		}
		idx, ok := p.warnPending[key]
		if !ok {
			return
		}
		delete(p.warnPending, key)
		if idx >= 0 && idx < len(p.res.Warnings) {
			w := p.res.Warnings[idx]
			w.Kind = "nccl-error"
			p.res.Warnings[idx].Kind = "" // promoted; removed in finish
			p.addFailure(w)
		}
	}
}

func (p *parser) failureLine(t string) bool {
	if !mayBeFailure(t) {
		return false
	}
	if m := reTestFail().FindStringSubmatch(t); m != nil {
		p.recognised = true
		kind := "nccl-failure"
		if m[2] == "CUDA" {
			kind = "cuda-failure"
		}
		p.addFailure(Event{Line: p.lineNo, Kind: kind, Host: m[1], Text: t})
		return true
	}
	if m := reTestFail2().FindStringSubmatch(t); m != nil {
		p.recognised = true
		p.addFailure(Event{Line: p.lineNo, Kind: "test-failure", Host: m[1], Text: t})
		return true
	}
	if reAbort().MatchString(t) {
		e := Event{Line: p.lineNo, Kind: "launcher-abort", Text: t}
		if m := reSrunError().FindStringSubmatch(t); m != nil {
			e.Host = m[1]
		}
		p.addFailure(e)
		return true
	}
	return false
}

// mayBeFailure is a cheap filter in front of the failure expressions.
func mayBeFailure(t string) bool {
	for _, k := range failureKeywords {
		if strings.Contains(t, k) {
			return true
		}
	}
	return false
}

var failureKeywords = []string{"failure", "MPI_ABORT", "noticed", "exited", "terminated normally", "lost communication", "signal", "terminate called", "srun: error"}

func (p *parser) addFailure(e Event) {
	p.addEvent(&p.res.Failures, e)
	if e.Host != "" {
		p.hosts[e.Host] = true
	}
}

func (p *parser) addEvent(list *[]Event, e Event) int {
	if len(*list) >= MaxEvents {
		return -1
	}
	*list = append(*list, e)
	return len(*list) - 1
}

// row parses one size-table row. The last eight fields are always two
// groups of time, algbw, busbw and check; the three to five before them are
// size, count, type and optionally redop and root.
func (p *parser) row(t string) bool {
	f := strings.Fields(t)
	if len(f) < 11 || len(f) > 13 {
		return false
	}
	lead := len(f) - 8
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	count, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || size < 0 || count < 0 {
		return false
	}
	r := Row{Bytes: size, Count: count, Type: f[2], Root: -1, Line: p.lineNo}
	if _, ok := knownDTypes[r.Type]; !ok {
		return false
	}
	if lead >= 4 {
		r.RedOp = f[3]
		if !knownRedOps[r.RedOp] {
			return false
		}
	}
	if lead == 5 {
		root, err := strconv.Atoi(f[4])
		if err != nil {
			return false
		}
		r.Root = root
	}
	var ok1, ok2 bool
	r.OutOfPlace, ok1 = parseSide(f[lead : lead+4])
	r.InPlace, ok2 = parseSide(f[lead+4:])
	if !ok1 || !ok2 {
		return false
	}
	p.recognised = true
	if len(p.res.Rows) >= MaxRows {
		p.res.RowsDropped++
		return true
	}
	p.res.Rows = append(p.res.Rows, r)
	return true
}

func parseSide(f []string) (Side, bool) {
	var s Side
	var err error
	if s.TimeUS, err = parseFinite(f[0]); err != nil {
		return s, false
	}
	if s.AlgBW, err = parseFinite(f[1]); err != nil {
		return s, false
	}
	if s.BusBW, err = parseFinite(f[2]); err != nil {
		return s, false
	}
	if f[3] == "N/A" {
		return s, true
	}
	v, err := parseFinite(f[3])
	if err != nil || v < 0 {
		return s, false
	}
	s.Check = &v
	return s, true
}

func parseFinite(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not finite: %q", s)
	}
	return v, nil
}

// deltaMax is the largest "error" value old nccl-tests accepts for a type
// (its DeltaMaxValue): floating types tolerate rounding, integers nothing.
func deltaMax(dtype string) float64 {
	switch {
	case integerTypes[dtype]:
		return 0
	case dtype == "double" || dtype == "float64":
		return 1e-12
	case dtype == "float" || dtype == "float32":
		return 1e-5
	default:
		return 1e-2
	}
}

func (p *parser) finish() *Result {
	res := &p.res
	res.Format = p.headerFormat
	if res.Format == "" && len(res.Rows) > 0 {
		res.Format = guessFormat(res.Rows)
	}
	for _, r := range res.Rows {
		for i, s := range []Side{r.OutOfPlace, r.InPlace} {
			if s.Check == nil {
				continue
			}
			if res.Format == CheckWrong {
				res.Wrong += *s.Check
			} else if *s.Check > deltaMax(r.Type) {
				res.Wrong++
				if i == 0 {
					p.oldErrOOP = true
				}
			}
		}
	}
	if res.Format == CheckWrong && res.Wrong > 0 {
		p.addFailure(Event{Kind: "corruption", Text: fmt.Sprintf("%g wrong elements in the size table", res.Wrong)})
	} else if p.oldErrOOP && (res.OutOfBounds == nil || *res.OutOfBounds > 0) {
		p.addFailure(Event{Kind: "corruption", Text: "out-of-place error beyond tolerance in the size table"})
	}
	kept := res.Warnings[:0]
	for _, w := range res.Warnings {
		if w.Kind != "" {
			kept = append(kept, w)
		}
	}
	res.Warnings = kept
	res.Collective = p.collective()
	res.Ranks = len(p.rankSeen)
	if res.Ranks == 0 {
		res.Ranks = p.maxNRanks
	}
	res.GPUModel = mostCommon(p.models)
	res.Hosts = sortedKeys(p.hosts)
	switch {
	case len(res.Failures) > 0:
		res.Outcome = OutcomeFailed
	case res.AvgBusBW != nil:
		res.Outcome = OutcomeOK
	default:
		res.Outcome = OutcomeTruncated
	}
	return res
}

// guessFormat decides the check column layout when the column header was
// not seen: integer values mean "#wrong", fractional ones the old "error".
func guessFormat(rows []Row) CheckFormat {
	for _, r := range rows {
		for _, s := range []Side{r.OutOfPlace, r.InPlace} {
			if s.Check != nil && *s.Check != math.Trunc(*s.Check) {
				return CheckError
			}
		}
	}
	return CheckWrong
}

// collective names the test: the banner wins, then a "<name>_perf" token in
// the command line, then the table's shape.
func (p *parser) collective() string {
	if p.marker != "" {
		return p.marker
	}
	if p.perfName != "" {
		return p.perfName
	}
	return inferCollective(p.res.Rows)
}

// inferCollective recognises a collective from a row's shape: whether the
// element count covers the whole message or one rank's share, the reduction
// operator and the root.
func inferCollective(rows []Row) string {
	for _, r := range rows {
		width := int64(knownDTypes[r.Type])
		if r.Count == 0 || width == 0 {
			continue
		}
		whole := r.Count*width == r.Bytes
		reduces := r.RedOp != "" && r.RedOp != "none"
		// alltoall and sendrecv validate out-of-place only.
		pointToPoint := r.OutOfPlace.Check != nil && r.InPlace.Check == nil
		switch {
		case pointToPoint && whole:
			return "sendrecv"
		case pointToPoint:
			return "alltoall"
		case reduces && r.Root >= 0:
			return "reduce"
		case reduces && whole:
			return "all_reduce"
		case reduces:
			return "reduce_scatter"
		case r.Root >= 0:
			return "broadcast"
		case whole:
			return "sendrecv"
		default:
			return "all_gather"
		}
	}
	return ""
}

func mostCommon(m map[string]int) string {
	best, n := "", 0
	for k, v := range m {
		if v > n || (v == n && k < best) {
			best, n = k, v
		}
	}
	return best
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MarshalJSON writes the result with the derived figures callers rely on:
// "ranks" (null when unknown), "avg_busbw_gbps" (null without the footer),
// "max_busbw_gbps", "failed_hosts" and "wrong_nonzero".
func (r *Result) MarshalJSON() ([]byte, error) {
	type plain Result
	var ranks *int
	if r.Ranks > 0 {
		ranks = &r.Ranks
	}
	return json.Marshal(struct {
		*plain
		Ranks        *int     `json:"ranks"`
		AvgBusBW     *float64 `json:"avg_busbw_gbps"`
		MaxBusBW     float64  `json:"max_busbw_gbps"`
		WrongNonzero bool     `json:"wrong_nonzero"`
		FailedHosts  []string `json:"failed_hosts,omitempty"`
	}{(*plain)(r), ranks, r.AvgBusBW, r.MaxBusBW(), r.Wrong > 0, r.FailedHosts()})
}
