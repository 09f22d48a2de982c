// Package metrics reads the progress of a training job from the end of its
// log: step time, throughput, step and total steps, loss, ETA, and whether the
// job has slowed down or stalled. It reads fixed-size blocks backwards and
// stops after a bounded number of training progress lines, so the cost does
// not depend on the size of the log.
package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/schedmate/schedmate/internal/logtext"
)

// Options tune the extraction. Zero values take the defaults.
type Options struct {
	// ProgressLines is how many training progress lines to collect from the
	// end (default 30).
	ProgressLines int
	// MaxScanBytes bounds how far back the log is read (default 4 MiB).
	MaxScanBytes int64
	// MaxRawLine bounds the bytes kept of one physical line (default 256 KiB).
	MaxRawLine int
	// SlowdownRatio flags a slowdown when the speed of the newest lines is
	// below this fraction of the older ones (default 0.65).
	SlowdownRatio float64
	// StallSteps flags a stall when the log has not changed for this many
	// step times (default 20).
	StallSteps float64
	// MinStall is the shortest silence ever called a stall (default 2m).
	MinStall time.Duration
	// Now is the time the log's modification time is compared with
	// (default time.Now()).
	Now time.Time
}

func (o Options) withDefaults() Options {
	if o.ProgressLines <= 0 {
		o.ProgressLines = 30
	}
	if o.MaxScanBytes <= 0 {
		o.MaxScanBytes = 4 << 20
	}
	if o.SlowdownRatio <= 0 {
		o.SlowdownRatio = 0.65
	}
	if o.StallSteps <= 0 {
		o.StallSteps = 20
	}
	if o.MinStall <= 0 {
		o.MinStall = 2 * time.Minute
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// Report is what the end of a log says about a job's training progress.
// Pointer fields are nil when the log does not say.
type Report struct {
	// StepTimeS is the wall time of one training step in seconds.
	StepTimeS *float64 `json:"step_time_s"`
	// Source says how StepTimeS was found: explicit, rate, timestamps,
	// throughput, eta or elapsed-clock.
	Source string `json:"source,omitempty"`
	// Step is the last training step number as printed.
	Step *int64 `json:"step"`
	// TotalSteps is the number of steps the log announces.
	TotalSteps *int64 `json:"total_steps"`
	// Throughput is the newest throughput figure, in ThroughputUnit.
	Throughput     *float64 `json:"throughput"`
	ThroughputUnit string   `json:"throughput_unit"`
	// ETAS is the remaining time in seconds, known when TotalSteps is.
	ETAS *float64 `json:"eta_s"`
	// Loss is the newest training loss.
	Loss *float64 `json:"loss"`
	// LastProgressLine is the newest training progress line, cleaned.
	LastProgressLine string `json:"last_progress_line"`
	// LastProgressTime is that line's own timestamp when it has one (the
	// date may be missing from the log; then only the time of day counts).
	LastProgressTime *time.Time `json:"last_progress_time,omitempty"`
	// ProgressLines are the newest training progress lines, oldest first.
	ProgressLines []string `json:"progress_lines,omitempty"`
	// RecentStepTimes are per-line step times, oldest first.
	RecentStepTimes []float64 `json:"recent_step_times,omitempty"`
	// SpeedRatio is the speed of the newest lines over the older ones
	// (below 1 means slower); nil when there are too few lines.
	SpeedRatio *float64 `json:"speed_ratio,omitempty"`
	// Slowdown is set when SpeedRatio is below Options.SlowdownRatio.
	Slowdown bool `json:"slowdown"`
	// Stalled is set when the log has not changed for many step times.
	Stalled bool `json:"stalled"`
	// ErrorLine is the first error-looking line after the last progress line.
	ErrorLine string `json:"error_line,omitempty"`
	// ModTime is the log's modification time when read from a file.
	ModTime time.Time `json:"mod_time,omitzero"`
	// BytesRead is how many bytes of the log were read.
	BytesRead int64 `json:"bytes_read"`
}

// Errors for logs that cannot be read as text.
var (
	// ErrNotRegular is returned for a log path that is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrBinary is returned when the end of the log is binary data.
	ErrBinary = errors.New("binary data, not a text log")
	// ErrChanged is returned when the log shrank while it was read
	// (truncated or rotated).
	ErrChanged = errors.New("log shrank while being read (truncated or rotated)")
)

// ExtractFile reads the progress of the log at path.
func ExtractFile(path string, opts Options) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat log %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read log %s: %w", path, ErrNotRegular)
	}
	rep, err := Extract(f, fi.Size(), opts)
	if err != nil {
		if now, serr := f.Stat(); serr == nil && now.Size() < fi.Size() {
			err = ErrChanged
		}
		return nil, fmt.Errorf("read log %s: %w", path, err)
	}
	rep.ModTime = fi.ModTime()
	rep.markStalled(opts.withDefaults())
	return rep, nil
}

// Extract reads the progress from the first size bytes of r. A log without
// any training progress line gives a Report whose figures are all nil.
func Extract(r io.ReaderAt, size int64, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	col := collector{opts: opts}
	sc := logtext.NewReverseScanner(r, size, opts.MaxRawLine)
	sc.SetLimit(opts.MaxScanBytes)
	var nul int64
	for !col.full() && sc.BytesRead() <= opts.MaxScanBytes && sc.Scan() {
		nul += int64(bytes.Count(sc.Line(), []byte{0}))
		segs := logtext.Segments(sc.Line())
		for i := len(segs) - 1; i >= 0 && !col.full(); i-- {
			_, text := logtext.SplitRankPrefix(logtext.CleanSegment(segs[i]))
			col.add(text, belowAnotherBar(segs[i]))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	col.flushNested()
	if len(col.samples) == 0 && nul > 0 && nul*4 > sc.BytesRead() {
		return nil, ErrBinary
	}
	rep := col.report(func() []string { return headLines(r, size) })
	rep.BytesRead = sc.BytesRead()
	return rep, nil
}

// cursorUp is the escape sequence tqdm writes after drawing a bar below
// another one (position 1 or more), to move back to the outer bar's line.
var cursorUp = []byte("\x1b[A")

// belowAnotherBar reports whether a raw segment is a bar drawn below
// another bar, such as an evaluation bar while the training bar is open.
func belowAnotherBar(seg []byte) bool {
	return bytes.HasSuffix(bytes.TrimRight(seg, " \n"), cursorUp)
}

// headBytes bounds how much of the start of a log is read for the settings
// a run prints once (batch size, total steps).
const headBytes = 256 << 10

// headLines returns the cleaned lines of the start of the log.
func headLines(r io.ReaderAt, size int64) []string {
	n := int64(headBytes)
	if n > size {
		n = size
	}
	buf := make([]byte, n)
	got, _ := r.ReadAt(buf, 0)
	buf = buf[:got]
	var lines []string
	for len(buf) > 0 {
		i := 0
		for i < len(buf) && buf[i] != '\n' {
			i++
		}
		lines = append(lines, logtext.Clean(buf[:i]))
		if i == len(buf) {
			break
		}
		buf = buf[i+1:]
	}
	return lines
}

// markStalled sets Stalled when the log has been silent for many step times.
func (rep *Report) markStalled(opts Options) {
	if rep.StepTimeS == nil || rep.ModTime.IsZero() {
		return
	}
	silent := opts.Now.Sub(rep.ModTime)
	limit := time.Duration(*rep.StepTimeS * opts.StallSteps * float64(time.Second))
	if limit < opts.MinStall {
		limit = opts.MinStall
	}
	rep.Stalled = silent > limit
}

// median returns the median of v (which it sorts).
func median(v []float64) float64 {
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
