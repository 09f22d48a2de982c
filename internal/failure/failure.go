// Package failure finds the root cause of a failed job in its log and
// classifies it. The locator follows the paper's Algorithm 1 (a binary search
// over 20-line chunks for the failure region) made robust for real logs: it
// anchors on the terminal failure cascade at the end of the log, searches
// backwards over byte offsets only when that cascade is longer than the tail
// window, and then scans the cascade for the earliest line that states the
// cause, skipping wrappers and symptoms. The classifier maps the root line's
// signature to the Acme taxonomy (infrastructure, framework, script, other)
// with a component, a confidence, the evidence and a recommended action.
package failure

import (
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/schedmate/schedmate/internal/lazyre"
	"github.com/schedmate/schedmate/internal/logclass"
	"github.com/schedmate/schedmate/internal/logtext"
	"github.com/schedmate/schedmate/internal/store"
)

// Options tune how much of a log the locator reads.
type Options struct {
	// ChunkLines is the chunk size of the binary search (paper: 20).
	ChunkLines int
	// TailBytes is the window read at the end of the log, where the
	// terminal failure cascade sits.
	TailBytes int
	// HeadBytes is the window read at the start of the log to find causes
	// stated as warnings long before the crash.
	HeadBytes int
	// MaxCascadeBytes bounds how much of a long cascade is read.
	MaxCascadeBytes int
	// ContextLines is how many lines around the root line are returned.
	ContextLines int
}

// DefaultOptions returns the options used by the diagnose command and the
// epilog hook.
func DefaultOptions() Options {
	return Options{ChunkLines: 20, TailBytes: 512 << 10, HeadBytes: 64 << 10, MaxCascadeBytes: 512 << 10, ContextLines: 3}
}

// ContextLine is one numbered log line shown around the root line.
type ContextLine struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

// Diagnosis is the verdict on one log.
type Diagnosis struct {
	Category  Category `json:"category"`
	Component string   `json:"component"`
	// Line is the 1-based line number of the root cause, 0 when none.
	Line       int      `json:"line"`
	Text       string   `json:"text"`
	Confidence float64  `json:"confidence"`
	Evidence   []string `json:"evidence"`
	Action     string   `json:"action"`
	// LinesClassified counts the lines the locator classified.
	LinesClassified int           `json:"lines_classified"`
	Context         []ContextLine `json:"context,omitempty"`
}

// Failed reports whether the diagnosis found a failure.
func (d *Diagnosis) Failed() bool { return d.Category != None }

// Record converts the diagnosis into the form kept in the job history.
func (d *Diagnosis) Record() *store.Diagnosis {
	return &store.Diagnosis{Category: string(d.Category), Component: d.Component, Line: d.Line,
		Text: d.Text, Confidence: d.Confidence, Action: d.Action}
}

// entry is one classified line of a window.
type entry struct {
	offset int64
	text   string // cleaned, launcher prefix and surrounding space removed
	indent string // the leading space removed from text, kept for display
	class  logclass.Class
}

// DiagnoseFile opens the log at path and diagnoses it.
func DiagnoseFile(path string, opts Options) (*Diagnosis, error) {
	f, err := logtext.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Diagnose(f, opts)
}

// Diagnose locates and classifies the failure in f. A log without a
// terminal failure gets category None.
func Diagnose(f *logtext.File, opts Options) (*Diagnosis, error) {
	opts = withDefaults(opts)
	l := locator{f: f, opts: opts}
	return l.run()
}

func withDefaults(o Options) Options {
	d := DefaultOptions()
	if o.ChunkLines <= 0 {
		o.ChunkLines = d.ChunkLines
	}
	if o.TailBytes <= 0 {
		o.TailBytes = d.TailBytes
	}
	if o.HeadBytes <= 0 {
		o.HeadBytes = d.HeadBytes
	}
	if o.MaxCascadeBytes <= 0 {
		o.MaxCascadeBytes = d.MaxCascadeBytes
	}
	if o.ContextLines < 0 {
		o.ContextLines = 0
	}
	return o
}

// maxGap is how many unrelated lines may separate two errors of one cascade.
const maxGap = 40

// recoveredAfter is how many progress lines after the last error show that
// the job carried on, so the error was not fatal.
const recoveredAfter = 3

// maxRootScan bounds the cascade lines scanned for the root line.
const maxRootScan = 20000

type locator struct {
	f          *logtext.File
	opts       Options
	classified int
}

// read classifies the lines from start to end, at most maxLines of them
// and about maxBytes.
func (l *locator) read(start, end int64, maxLines, maxBytes int) ([]entry, error) {
	lines, _, err := l.f.ReadLines(start, end, maxLines, maxBytes)
	if err != nil {
		return nil, err
	}
	out := make([]entry, len(lines))
	for i, ln := range lines {
		_, rest := logtext.SplitRankPrefix(logtext.Clean(ln.Raw))
		rest = strings.TrimRightFunc(rest, unicode.IsSpace)
		text := strings.TrimLeftFunc(rest, unicode.IsSpace)
		out[i] = entry{offset: ln.Offset, text: text, indent: rest[:len(rest)-len(text)], class: logclass.Line(text)}
	}
	l.classified += len(out)
	return out, nil
}

func (l *locator) run() (*Diagnosis, error) {
	size := l.f.Size()
	tailStart, err := l.f.LineStart(size - int64(l.opts.TailBytes))
	if err != nil {
		return nil, err
	}
	window, err := l.read(tailStart, size, math.MaxInt, l.opts.TailBytes+logtext.MaxRawLine)
	if err != nil {
		return nil, err
	}
	last := lastError(window)
	if last < 0 || progressAfter(window[last+1:]) >= recoveredAfter {
		return l.none(), nil
	}
	start, reachedTop := walkBack(window, last)
	windowStart := tailStart
	if reachedTop && tailStart > 0 {
		prefix, from, err := l.searchCascadeStart(tailStart)
		if err != nil {
			return nil, err
		}
		window = append(prefix, window...)
		last += len(prefix)
		windowStart = from
		start, _ = walkBack(window, last)
	}
	root, ev := chooseRoot(window, start, last)
	if root < 0 {
		return l.none(), nil
	}
	rootSig := ev.rootSig
	// A cause stated before the cascade (a driver mismatch or unsupported
	// GPU architecture warned about, a device-side assertion) is the root
	// when it explains the cascade.
	pre, preSig, err := l.findPrecursor(window[:start], windowStart, rootSig)
	if err != nil {
		return nil, err
	}
	var rootEntry entry
	var context []entry
	if preSig != nil {
		ev.add(preSig.name)
		rootSig = preSig
		rootEntry = pre
	} else {
		rootEntry = window[root]
		from := max(0, root-l.opts.ContextLines)
		context = window[from:min(len(window), root+l.opts.ContextLines+1)]
	}
	return l.verdict(rootEntry, rootSig, ev, context)
}

func (l *locator) none() *Diagnosis {
	return &Diagnosis{Category: None, Evidence: []string{}, Action: "none: the log shows no failure", LinesClassified: l.classified}
}

// verdict builds the diagnosis for the chosen root line; context is a
// run of window lines around the root.
func (l *locator) verdict(root entry, s *signature, ev *evidence, context []entry) (*Diagnosis, error) {
	line, err := l.f.LineNumber(root.offset)
	if err != nil {
		return nil, fmt.Errorf("number root line: %w", err)
	}
	d := &Diagnosis{
		Category:        s.category,
		Component:       s.component,
		Line:            line,
		Text:            root.text,
		Confidence:      confidence(s, ev),
		Evidence:        ev.names,
		Action:          s.action,
		LinesClassified: l.classified,
	}
	if d.Category == Infrastructure && d.Component == "" {
		d.Component = ComponentOther
	}
	for _, c := range context {
		n, err := l.contextNumber(line, root.offset, c.offset)
		if err != nil {
			return nil, fmt.Errorf("number context line: %w", err)
		}
		// pieces of one overlong line share a number: show the first
		if len(d.Context) > 0 && d.Context[len(d.Context)-1].Number == n {
			continue
		}
		d.Context = append(d.Context, ContextLine{Number: n, Text: c.indent + c.text})
	}
	return d, nil
}

// contextNumber numbers the line at off from the root line's number by
// counting the newlines between them, since the window may hold several
// pieces of one overlong line.
func (l *locator) contextNumber(rootLine int, rootOff, off int64) (int, error) {
	if off <= rootOff {
		n, err := l.f.CountNewlines(off, rootOff)
		return rootLine - n, err
	}
	n, err := l.f.CountNewlines(rootOff, off)
	return rootLine + n, err
}

// confidence scores a verdict by how directly the root line names the cause
// and how much of the cascade agrees with it.
func confidence(s *signature, ev *evidence) float64 {
	base := map[tier]float64{cause: 0.85, generic: 0.6, symptom: 0.35}[s.tier]
	if s.category == Other {
		base = min(base, 0.4)
	}
	agree := 0
	for _, cat := range ev.categories {
		if cat == s.category {
			agree++
		}
	}
	return min(0.97, base+0.05*float64(min(agree-1, 2)))
}

// lastError returns the index of the last error line, or -1.
func lastError(w []entry) int {
	for i := len(w) - 1; i >= 0; i-- {
		if w[i].class == logclass.Error {
			return i
		}
	}
	return -1
}

func progressAfter(w []entry) int {
	n := 0
	for _, e := range w {
		if e.class == logclass.Progress {
			n++
		}
	}
	return n
}

// continuation matches lines that belong to an error report without being
// errors themselves: traceback frames and source lines, C++ frames, glog
// stacks, NCCL INFO return-code chains, caret markers.
var continuation = lazyre.New(`^(?:File "|frame #\d|@\s+0x|\^+$|~+\^*|\.\.\.|During handling of the above|The above exception was|Last error:|Exception raised from|\*\*\*|raise |return |NCCL INFO|[\w:.-]+:\d+:\d+ \[\d+\] NCCL INFO|\S+ NCCL INFO)|^\s*$`)

// walkBack returns the first line of the cascade that ends at last: it goes
// back over errors, warnings and continuation lines, and stops at training
// progress or after maxGap unrelated lines. reachedTop is true when the
// cascade may extend before the window.
func walkBack(w []entry, last int) (start int, reachedTop bool) {
	start, gap := last, 0
	for i := last; i >= 0; i-- {
		e := w[i]
		switch {
		case e.class == logclass.Progress:
			return start, false
		case e.class == logclass.Error:
			start, gap = i, 0
		case e.class == logclass.Warning || e.text == "" || continuation().MatchString(e.text) || len(e.indent) >= 2:
		default:
			gap++
			if gap > maxGap {
				return start, false
			}
		}
	}
	return start, gap <= maxGap
}

// searchCascadeStart binary-searches byte offsets before end for where the
// failure region begins: chunks with errors and no progress are inside it.
// It returns the lines from there to end (bounded) and their first offset.
func (l *locator) searchCascadeStart(end int64) ([]entry, int64, error) {
	lo, hi := int64(0), end
	minStep := int64(4 << 10)
	for hi-lo > minStep {
		mid := lo + (hi-lo)/2
		at, err := l.f.LineStart(mid)
		if err != nil {
			return nil, 0, err
		}
		chunk, err := l.read(at, end, l.opts.ChunkLines, l.opts.ChunkLines*logtext.MaxRawLine)
		if err != nil {
			return nil, 0, err
		}
		if failing(chunk) {
			hi = mid
		} else {
			lo = mid
		}
	}
	from, err := l.f.LineStart(lo)
	if err != nil {
		return nil, 0, err
	}
	if end-from > int64(l.opts.MaxCascadeBytes) {
		end = from + int64(l.opts.MaxCascadeBytes)
	}
	prefix, err := l.read(from, end, math.MaxInt, l.opts.MaxCascadeBytes)
	return prefix, from, err
}

// failing reports whether a chunk lies inside a failure region.
func failing(chunk []entry) bool {
	hasError := false
	for _, e := range chunk {
		switch e.class {
		case logclass.Progress:
			return false
		case logclass.Error:
			hasError = true
		}
	}
	return hasError
}

// evidence collects the signatures seen in a cascade.
type evidence struct {
	names      []string
	categories []Category
	rootSig    *signature
}

func (e *evidence) add(name string) {
	for _, n := range e.names {
		if n == name {
			return
		}
	}
	e.names = append(e.names, name)
}

// chooseRoot picks the root line in w[start..last]: the earliest line of the
// highest tier (cause over generic error over symptom), except that a GPU
// hardware fault outranks a device-side assertion printed before it. It
// returns -1 when the cascade holds nothing that reports a failure.
func chooseRoot(w []entry, start, last int) (int, *evidence) {
	ev := &evidence{names: []string{}}
	root, best := -1, tier(0)
	var rootSig *signature
	inLibrary := false
	for i := start - 1; i >= max(0, start-maxGap); i-- {
		if pythonFrame().MatchString(w[i].text) {
			inLibrary = libraryFrame().MatchString(w[i].text)
			break
		}
	}
	seen := map[string]bool{}
	shapes := map[string]*signature{}
	end := min(last, start+maxRootScan)
	for i := start; i <= end; i++ {
		e := w[i]
		if pythonFrame().MatchString(e.text) {
			inLibrary = libraryFrame().MatchString(e.text)
			continue
		}
		if e.class == logclass.Progress || continuation().MatchString(e.text) {
			continue
		}
		key := lineShape(e.text)
		s, known := shapes[key]
		if !known {
			s = matchSignature(e.text)
			shapes[key] = s
		}
		switch {
		case s == nil && e.class == logclass.Error:
			s = genericException(e.text, inLibrary)
			if s == nil {
				s = &genericError
			}
		case s == nil:
			continue
		case e.class != logclass.Error && s.tier != cause:
			// a warning or plain line counts only when it names the cause
			continue
		}
		if s.tier > symptom && !seen[s.name] {
			seen[s.name] = true
			ev.add(s.name)
			ev.categories = append(ev.categories, s.category)
		}
		if s.tier > best || s.tier == best && s.role == hardware && rootSig.role == deviceAssert {
			root, best, rootSig = i, s.tier, s
		}
	}
	if rootSig != nil && rootSig.tier == symptom && len(ev.names) == 0 {
		ev.add(rootSig.name)
		ev.categories = append(ev.categories, rootSig.category)
	}
	ev.rootSig = rootSig
	return root, ev
}

// digits matches the runs of digits that tell apart the repeats of one
// message (ranks, sequence numbers, timings).
var digits = lazyre.New(`[0-9]+`)

// lineShape returns text with its digit runs collapsed, so that the
// thousands of repeats of one message in a long cascade are matched against
// the signatures once.
func lineShape(text string) string {
	return digits().ReplaceAllLiteralString(text, "0")
}

// findPrecursor looks for a cause printed before the cascade that explains
// its root signature: in the window lines before it and in the head of the
// file.
func (l *locator) findPrecursor(before []entry, windowStart int64, root *signature) (entry, *signature, error) {
	if e, s := firstPrecursor(before, root); s != nil {
		return e, s, nil
	}
	if windowStart == 0 {
		return entry{}, nil, nil
	}
	headEnd := min(windowStart, int64(l.opts.HeadBytes))
	head, err := l.read(0, headEnd, math.MaxInt, l.opts.HeadBytes)
	if err != nil {
		return entry{}, nil, err
	}
	e, s := firstPrecursor(head, root)
	return e, s, nil
}

// firstPrecursor returns the first error or warning line of w that states a
// precursor explaining root.
func firstPrecursor(w []entry, root *signature) (entry, *signature) {
	for _, e := range w {
		if e.class != logclass.Error && e.class != logclass.Warning {
			continue
		}
		if s := matchSignature(e.text); s != nil && s.precursor && explains(s, root) {
			return e, s
		}
	}
	return entry{}, nil
}

// explains reports whether a precursor is the cause of a cascade whose root
// has signature root: it agrees with the root's category, or the root is
// only a symptom, or the root is a CUDA error reported after a kernel's
// device-side assertion.
func explains(pre, root *signature) bool {
	return root.tier == symptom || pre.category == root.category || pre.role == deviceAssert && root.role == asyncCUDA
}
