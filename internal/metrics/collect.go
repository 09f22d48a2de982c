package metrics

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/schedmate/schedmate/internal/lazyre"
)

// maxReportLines is how many progress lines a Report keeps.
const maxReportLines = 10

// collector gathers training progress samples from lines fed newest first.
type collector struct {
	opts      Options
	samples   []sample // newest first
	errorLine string
	loss      *float64 // newest loss seen on a line that is not a progress line
	// evalPending is set after an evaluation summary (HF "eval_loss" dict);
	// the unnamed bar just before it is the evaluation bar, not training.
	evalPending bool
	evalTotal   int64
	// nested holds the newest refreshes of an unnamed bar drawn below
	// another bar while no other progress line has been seen, until the
	// bar above shows what they are: an evaluation inside training when
	// the bar above is an unfinished, longer bar; else the training loop.
	nested      []sample
	nestedTotal int64
	// closing is set while the newest training sample is the line a tqdm
	// bar printed when it closed and the updates before it are read.
	// closeRates are their rates, one per step, newest first; closeStep
	// is the step of the oldest of them, at first the close line's.
	closing    bool
	closeRates []float64
	closeStep  int64
}

func (c *collector) full() bool { return len(c.samples) >= c.opts.ProgressLines }

// add classifies one cleaned line; nested is set for a bar drawn below
// another bar.
func (c *collector) add(text string, nested bool) {
	if nested && len(c.samples) == 0 && len(c.nested) >= c.opts.ProgressLines {
		return // more refreshes of the held bar: only the newest count
	}
	info := parseLine(text)
	s := info.s
	if c.closing && strings.TrimSpace(text) != "" {
		c.beforeClose(info)
	}
	if nested && len(c.samples) == 0 && info.progress && s.bar && s.hasStep && unnamed(s.desc) &&
		(c.nestedTotal == 0 || c.nestedTotal == s.total) {
		c.nestedTotal = s.total
		c.nested = append(c.nested, s)
		return
	}
	if info.progress && len(c.nested) > 0 {
		if s.bar && s.hasStep && unnamed(s.desc) && s.total > c.nestedTotal && s.step < s.total {
			// An evaluation bar below the unfinished training bar: it is
			// the one an evaluation summary after it belongs to.
			c.nested, c.evalPending, c.evalTotal = nil, false, 0
		} else {
			c.flushNested()
		}
	}
	if !info.progress {
		c.addOther(text, info)
		return
	}
	newest := len(c.samples) == 0
	c.addSample(s)
	if newest && len(c.samples) == 1 {
		c.closing, c.closeStep = tqdmClose(s), s.step
	}
}

// tqdmClose reports whether s may be the line tqdm prints when a bar
// closes: its counter at the total, with a rate.
func tqdmClose(s sample) bool {
	return s.tqdm && s.timeKind == kindRate && s.total > 0 && s.step == s.total
}

// barReadings is how many steps of a bar's last updates its close line
// takes the median rate of.
const barReadings = 5

// beforeClose reads a line printed before the newest sample, a tqdm bar's
// close line. tqdm's close() shows the average rate of the whole run,
// start-up included, where each update showed a smoothed recent rate; and
// one slow interval at the end, such as a last step that also logs, still
// swings that. So the close line takes the median rate of the bar's last
// updates, one per step: from the update printed just before it (at the
// total, or below it where updates came faster than tqdm's mininterval),
// across log records but not across another bar, such as an evaluation.
// A close line after a start line without a rate keeps its own.
func (c *collector) beforeClose(info lineInfo) {
	u, last := info.s, &c.samples[0]
	switch {
	case info.progress && u.tqdm && u.timeKind == kindRate && !u.eval && u.total == last.total && u.step <= c.closeStep:
		if len(c.closeRates) == 0 || u.step < c.closeStep {
			c.closeRates = append(c.closeRates, u.stepTime)
			c.closeStep = u.step
			last.stepTime = median(append([]float64(nil), c.closeRates...))
		}
		if len(c.closeRates) < barReadings {
			return
		}
	case len(c.closeRates) > 0 && !u.bar:
		return // a log record between two updates
	}
	c.closing = false
}

// addOther notes what a line that is not progress says: an error, an
// evaluation summary, a loss.
func (c *collector) addOther(text string, info lineInfo) {
	if len(c.samples) == 0 && info.isError {
		c.errorLine = text
	}
	if c.evalTotal == 0 && evalLike(text) {
		c.evalPending = true
	} else if info.s.hasLoss && c.loss == nil && len(c.samples) == 0 {
		loss := info.s.loss
		c.loss = &loss
	}
}

// addSample keeps a progress sample unless it is evaluation or a repeat.
func (c *collector) addSample(s sample) {
	if s.eval {
		return
	}
	if s.bar && unnamed(s.desc) && c.evalPending {
		if c.evalTotal == 0 {
			c.evalTotal = s.total
		}
		if s.total == c.evalTotal {
			return
		}
		c.evalPending, c.evalTotal = false, 0
	}
	if n := len(c.samples); n > 0 {
		last := c.samples[n-1]
		if s.hasStep && last.hasStep && last.step == s.step && last.total == s.total {
			return // the same step printed by another rank or a bar refresh
		}
	}
	c.samples = append(c.samples, s)
}

// flushNested takes the held bar refreshes as training progress.
func (c *collector) flushNested() {
	held := c.nested
	c.nested = nil
	for _, s := range held {
		if !c.full() {
			c.addSample(s)
		}
	}
}

// unnamed reports whether a bar has no description of its own.
func unnamed(desc string) bool {
	return strings.TrimFunc(desc, func(r rune) bool {
		return r == ' ' || r == '|' || r == '%' || r == '#' || (r >= '0' && r <= '9') || (r >= 0x2580 && r <= 0x259f)
	}) == ""
}

// estimate is one way of reading the step time, with its per-line series.
type estimate struct {
	value  float64
	kind   kind
	series []float64 // oldest first
}

// report turns the samples into a Report. head returns the first lines of
// the log; it is called only when a setting printed once is needed.
func (c *collector) report(head func() []string) *Report {
	rep := &Report{ErrorLine: c.errorLine, Loss: c.loss}
	if len(c.samples) == 0 {
		return rep
	}
	var set *settings
	getSettings := func() *settings {
		if set == nil {
			lines := head()
			for _, s := range c.samples {
				lines = append(lines, s.text)
			}
			set = readSettings(lines)
		}
		return set
	}
	newest := c.samples[0]
	rep.LastProgressLine = newest.text
	if newest.hasTS {
		t := newest.ts
		rep.LastProgressTime = &t
	}
	for i := min(len(c.samples), maxReportLines) - 1; i >= 0; i-- {
		rep.ProgressLines = append(rep.ProgressLines, c.samples[i].text)
	}
	for _, s := range c.samples {
		if s.hasStep {
			step := s.step
			rep.Step = &step
			if s.total > 0 {
				total := s.total
				rep.TotalSteps = &total
			}
			break
		}
	}
	if rep.TotalSteps == nil && rep.Step != nil {
		if t := getSettings().totalSteps; t > 0 && t >= *rep.Step {
			rep.TotalSteps = &t
		}
	}
	for _, s := range c.samples {
		if s.hasLoss {
			v := s.loss
			rep.Loss = &v
			break
		}
	}
	if s, ok := c.newestThroughput(); ok {
		v := s.tput
		rep.Throughput, rep.ThroughputUnit = &v, s.tputUnit
	}
	best := c.bestEstimate(getSettings)
	if best.kind == kindNone {
		return rep
	}
	v := best.value
	rep.StepTimeS, rep.Source = &v, best.kind.String()
	rep.RecentStepTimes = best.series
	if rep.Step != nil && rep.TotalSteps != nil && *rep.TotalSteps >= *rep.Step {
		eta := float64(*rep.TotalSteps-*rep.Step) * v
		rep.ETAS = &eta
	}
	if n := len(best.series); n >= 6 {
		k := n / 3
		if k < 3 {
			k = 3
		}
		older := append([]float64(nil), best.series[:n-k]...)
		newer := append([]float64(nil), best.series[n-k:]...)
		if mn := median(newer); mn > 0 {
			ratio := median(older) / mn
			rep.SpeedRatio = &ratio
			rep.Slowdown = ratio < c.opts.SlowdownRatio
		}
	}
	return rep
}

// bestEstimate tries every way of reading the step time and keeps the most
// direct one that the samples support.
func (c *collector) bestEstimate(getSettings func() *settings) estimate {
	var best estimate
	consider := func(e estimate) {
		if e.kind > best.kind && e.value > 0 && !math.IsInf(e.value, 0) && !math.IsNaN(e.value) {
			best = e
		}
	}
	// A printed time or rate of a step beats one of a whole-run summary.
	restarted := c.restartedBar()
	for _, summary := range []bool{false, true} {
		for _, k := range []kind{kindExplicit, kindRate} {
			var e estimate
			for i, s := range c.samples {
				if s.timeKind == k && s.summary == summary && i >= restarted {
					if e.kind == kindNone {
						e.value, e.kind = s.stepTime, k
					}
					e.series = append(e.series, s.stepTime)
				}
			}
			reverse(e.series)
			consider(e)
			if best.kind != kindNone {
				return best
			}
		}
	}
	consider(c.slopeEstimate())
	if best.kind == kindTimestamp {
		return best
	}
	if s, ok := c.newestThroughput(); ok {
		set := getSettings()
		per := set.samplesPerStep
		if s.tputUnit == "tokens/s" || s.tputUnit == "words/s" {
			per = set.tokensPerStep
		}
		if per > 0 {
			consider(estimate{value: per / s.tput, kind: kindThroughput})
		}
	}
	for _, s := range c.samples {
		if s.hasETA && s.hasStep && s.total > s.step {
			consider(estimate{value: s.eta / float64(s.total-s.step), kind: kindETA})
			break
		}
	}
	consider(c.differenced(kindClock, func(s sample) (float64, bool) { return s.clock, s.hasClock }))
	return best
}

// barWarmup is how many steps of a tqdm bar that restarted (a new epoch)
// are read as its warm-up: its rate averages over the time since the bar
// began, which holds the data loader's restart and any validation pass
// (Lightning draws its bars with no smoothing at all).
func barWarmup(total int64) int64 { return max(10, total/10) }

// restartedBar returns the index of the newest sample to read rates from:
// past the first updates of a tqdm bar that restarted at a lower step than
// an older update of the same bar showed, while an older reading exists;
// 0 when the newest bar did not restart or has left its warm-up.
func (c *collector) restartedBar() int {
	i := 0
	for i < len(c.samples) {
		s := c.samples[i]
		if !s.tqdm || !s.hasStep || s.step >= barWarmup(s.total) {
			break
		}
		i++
	}
	if i == 0 || i == len(c.samples) {
		return 0
	}
	if older := c.samples[i]; older.tqdm && older.hasStep && older.step > c.samples[i-1].step && older.timeKind == kindRate {
		// The step time comes from the older bar until this one has left
		// its warm-up.
		return i
	}
	return 0
}

// newestThroughput returns the newest sample with a throughput, one of a
// whole-run summary only when no other has one.
func (c *collector) newestThroughput() (sample, bool) {
	for _, summary := range []bool{false, true} {
		for _, s := range c.samples {
			if s.tput > 0 && s.summary == summary {
				return s, true
			}
		}
	}
	return sample{}, false
}

// slopeEstimate reads the step time from line timestamps: the newest pair
// when they have sub-second resolution, else a window over the run of
// increasing steps at the end.
func (c *collector) slopeEstimate() estimate {
	e := c.differenced(kindTimestamp, func(s sample) (float64, bool) {
		return float64(s.ts.UnixNano()) / 1e9, s.hasTS && s.tsFine
	})
	if e.kind != kindNone {
		return e
	}
	newest := -1
	oldest := -1
	for i, s := range c.samples {
		if !s.hasTS || !s.hasStep {
			continue
		}
		if newest < 0 {
			newest = i
			oldest = i
			continue
		}
		prev := c.samples[oldest]
		if s.step >= prev.step || s.ts.After(prev.ts) {
			break
		}
		oldest = i
	}
	if newest < 0 || oldest == newest {
		return estimate{}
	}
	a, b := c.samples[newest], c.samples[oldest]
	dt := a.ts.Sub(b.ts).Seconds()
	if dt < 2 {
		return estimate{}
	}
	return estimate{value: dt / float64(a.step-b.step), kind: kindTimestampSlow}
}

// differenced reads the step time from a cumulative clock: the difference
// between successive lines divided by the steps between them.
func (c *collector) differenced(k kind, clock func(sample) (float64, bool)) estimate {
	var e estimate
	for i := 0; i+1 < len(c.samples); i++ {
		a, b := c.samples[i], c.samples[i+1]
		ta, okA := clock(a)
		tb, okB := clock(b)
		if !okA || !okB || !a.hasStep || !b.hasStep || a.step <= b.step {
			continue
		}
		dt := ta - tb
		if dt < 0 && dt > -86400 && k == kindTimestamp && a.ts.Year() == 0 {
			dt += 86400 // a time of day that passed midnight
		}
		if dt <= 0 {
			continue
		}
		v := dt / float64(a.step-b.step)
		if e.kind == kindNone {
			e.value, e.kind = v, k
		}
		e.series = append(e.series, v)
	}
	reverse(e.series)
	return e
}

func reverse(v []float64) {
	for i, j := 0, len(v)-1; i < j; i, j = i+1, j-1 {
		v[i], v[j] = v[j], v[i]
	}
}

// settings are figures a run prints once, usually at its start.
type settings struct {
	totalSteps     int64
	tokensPerStep  float64
	samplesPerStep float64
}

var (
	reTotalSetting  = lazyre.New(`(?i)(?:total optimization steps|max_steps|max steps|total steps|total_steps|train_iters|max_iters?|total generation batches|num_training_steps|total_iters|total iterations)['"]?\s*[:=]?\s*['"]?\s*(\d[\d,]*)`)
	reTokensPerStep = lazyre.New(`(?i)(?:tokens\s*(?:/|per)\s*(?:optimizer\s*)?step|tokens_per_step|tokens per batch)['"]?\s*[:=]?\s*(\d[\d,]*)`)
	reSamplesStep   = lazyre.New(`(?i)(?:total train batch size[^=:]*|global[_ ]batch[_ ]size|train_batch_size)['"]?[\s.:=]*(\d[\d,]*)`)
	reSeqLen        = lazyre.New(`(?i)(?:seq_length|seq_len|max_seq_length|sequence[_ ]length|encoder_seq_length|block_size)['"]?\s*[:=]?\s*(\d[\d,]*)`)
)

// readSettings finds total steps and per-step batch sizes; the last
// statement of each wins.
func readSettings(lines []string) *settings {
	set := &settings{}
	seqLen := 0.0
	for _, l := range lines {
		if !hasDigit(l) {
			continue
		}
		lower := strings.ToLower(l)
		if !strings.Contains(lower, "step") && !strings.Contains(lower, "batch") && !strings.Contains(lower, "iter") && !strings.Contains(lower, "seq") && !strings.Contains(lower, "block") {
			continue
		}
		if v := settingValue(reTotalSetting(), l); v > 0 {
			set.totalSteps = int64(v)
		}
		if v := settingValue(reTokensPerStep(), l); v > 0 {
			set.tokensPerStep = v
		}
		if v := settingValue(reSamplesStep(), l); v > 0 {
			set.samplesPerStep = v
		}
		if v := settingValue(reSeqLen(), l); v > 0 {
			seqLen = v
		}
	}
	if set.tokensPerStep == 0 && set.samplesPerStep > 0 && seqLen > 0 {
		set.tokensPerStep = set.samplesPerStep * seqLen
	}
	return set
}

func settingValue(re *regexp.Regexp, line string) float64 {
	m := re.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	if err != nil {
		return 0
	}
	return v
}
