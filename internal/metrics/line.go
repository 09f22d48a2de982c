package metrics

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/lazyre"
)

// kind ranks how directly a line states the time of one training step;
// a higher kind is preferred when several are present.
type kind int

const (
	kindNone          kind = iota
	kindTimestampSlow      // slope of second-resolution timestamps over a window
	kindClock              // difference of a cumulative elapsed clock
	kindETA                // remaining time divided by remaining steps
	kindThroughput         // throughput divided into the per-step size
	kindTimestamp          // slope of sub-second timestamps of successive lines
	kindRate               // a rate: it/s, s/it, updates per second
	kindExplicit           // a printed per-iteration time
)

// String names the kind as reported in Report.Source.
func (k kind) String() string {
	return [...]string{"", "timestamps", "elapsed-clock", "eta", "throughput", "timestamps", "rate", "explicit"}[k]
}

// sample is what one log line says about training progress.
type sample struct {
	text     string
	stepTime float64 // seconds, from an explicit time or a rate
	timeKind kind    // kindExplicit or kindRate when stepTime is set
	step     int64
	total    int64
	hasStep  bool
	loss     float64
	hasLoss  bool
	tput     float64
	tputUnit string
	ts       time.Time
	tsFine   bool // timestamp has sub-second resolution
	hasTS    bool
	clock    float64 // cumulative elapsed seconds
	hasClock bool
	eta      float64 // remaining seconds
	hasETA   bool
	bar      bool // a tqdm/Keras style bar
	tqdm     bool // a tqdm bar: "[elapsed<remaining, rate]"
	desc     string
	eval     bool
	// summary is set on a line that sums up a whole run or epoch (HF
	// "train_runtime", "Total time: ... (0.17 s / it)"): its figures are
	// averages that include start-up, evaluation and checkpoints.
	summary bool
}

// lineInfo is the result of parsing one cleaned line.
type lineInfo struct {
	s        sample
	progress bool // a training or evaluation progress line
	isError  bool
}

const num = `(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)`

// keyStart is what may precede a key so that "data_time" or
// "timing_s/step" are not read as "time" or "step".
const keyStart = `(?:^|[\s,;|\[\](){}'"])`

var (
	reExplicit = []struct {
		re      func() *regexp.Regexp
		unit    string   // default unit when the pattern has no unit group
		needles []string // lower-case text one of which must be present
	}{
		{lazyre.New(`(?i)elapsed time per iteration \(ms\):\s*` + num + `()`), "ms", []string{"per iteration"}},
		{lazyre.New(`(?i)train_step_timing(?: in s)?\s*[:=]\s*` + num + `()`), "s", []string{"train_step_timing"}},
		{lazyre.New(`(?i)timing_s/step\s*[:=]\s*` + num + `()`), "s", []string{"timing_s/step"}},
		{lazyre.New(`(?i)E2E latency\s*[:=]\s*` + num + `\s*(ms|s)?`), "s", []string{"e2e latency"}},
		{lazyre.New(`(?i)` + keyStart + `(?:iter_time|step_time|steptime|time_per_step|time/step|time_per_iter|time_per_iteration|batch_time|iter_dt|iteration_time|it_time|updt_s|sec/step|sec_per_step|step_duration|perf/time_per_step)['"]?\s*[:=]?\s*['"]?` + num + `\s*(ms|s|sec)?\b`), "s", []string{"time", "_dt", "updt", "sec", "duration"}},
		{lazyre.New(`(?i)` + keyStart + `step_time_ms['"]?\s*[:=]\s*['"]?` + num + `()`), "ms", []string{"step_time_ms"}},
		{lazyre.New(num + `\s*(us|µs|ms|s)\s*/\s*(?:step|it|iter|iteration|batch)\b`), "s", []string{"/step", "/it", "/batch", "/ it", "/ step"}},
	}
	// reBareTime is a plain "time"/"dt" key, trusted only on lines with a
	// step counter.
	reBareTime  = lazyre.New(`(?i)` + keyStart + `(?:time|dt|seconds|step time|iteration time)\s*[:=]?\s*` + num + `\s*(ms|s|sec)?(?:\b|$)`)
	reTqdm      = lazyre.New(`\[\s*(\d+(?::\d+){1,2})\s*<\s*(\d+(?::\d+){1,2}|\?)\s*(?:,\s*(` + num + `|\?)\s*([A-Za-z]+/s|s/[A-Za-z]+))?`)
	reRate      = lazyre.New(`(?i)` + num + `\s*(it/s|its/s|steps/s|step/s|iter/s|batches/s|s/it|s/iter)\b`)
	reRateKey   = lazyre.New(`(?i)` + keyStart + `(ups|steps_per_second|train_steps_per_second|it/s|iters_per_sec)['"]?\s*[:=]?\s*['"]?` + num)
	reEpochIter = lazyre.New(`(?i)epoch\s*[:=]?\s*(\d+)\s*/\s*(\d+)\s*,\s*iter\s*[:=]?\s*(\d+)\s*/\s*(\d+)`)
	reStepKey   = lazyre.New(`(?i)` + keyStart + `(global_step|num_updates|iteration|iter|step|steps|update|batch)(?:\s*\((\w+)\))?['"]?\s*[:=]?\s*['"]?\s*(\d+)(\.\d+)?([kKM])?(?:\s*(?:/|of)\s*(\d+(?:\.\d+)?)([kKM])?)?`)
	reBracket   = lazyre.New(`\[\s*(\d+)\s*/\s*(\d+)\s*(?:\(\s*\d+%\s*\)\s*)?\]`)
	reBar       = lazyre.New(`(?:^|[\s|])(\d+)/(\d+)\s*(?:\[|[━=\-.>─]{3}|\|)`)
	reRichBar   = lazyre.New(`[━╸╺]{3,}\s*(\d+)/(\d+)(?:\s|$)`) // Rich: the counter follows the bar
	reLoss      = lazyre.New(`(?i)` + keyStart + `([a-z_/ ]{0,20}?loss)['"]?\s*[:=]?\s*['"]?\s*(-?` + num[1:])
	reTput      = lazyre.New(`(?i)` + keyStart + `(tps|wps|tok/s|tokens/s|tokens_per_sec\w*|tokens_per_second|tokens/sec|samples/s|samples/sec|samples_per_sec\w*|samples_per_second|train_samples_per_second|CurrSamplesPerSec|throughput|img/s|images/s)['"]?\s*[:=]?\s*['"]?\s*(\d[\d,]*(?:\.\d+)?)\s*([kKM])?`)
	reTputVal   = lazyre.New(`(?i)(\d[\d,]*(?:\.\d+)?)\s*([kKM])?\s*(tokens/s|tok/s|tokens/sec|samples/s|samples/sec|img/s|images/s|imgs/s|examples/s|sequences/s|seq/s)\b`)
	reRich      = lazyre.New(`(\d+:\d{2}:\d{2})\s*/\s*(\d+:\d{2}:\d{2}|-:--:--)`)
	reETA       = lazyre.New(`(?i)` + keyStart + `(?:eta|remaining)\s*[:=]?\s*((?:\d+\s*days?,\s*)?\d+(?::\d{2}){1,2}|\d+(?:\.\d+)?\s*(?:ms|s|m|h)\b(?:\s*\d+\s*s\b)?)`)
	reElapsed   = lazyre.New(`(?i)` + keyStart + `elapsed\s*[:=]?\s*(\d+(?::\d{2}){1,2})`)
	reTimestamp = lazyre.New(`(?:^|[\[\s])(?:(\d{4})[-/](\d{2})[-/](\d{2})|(\d{2})/(\d{2}))[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?`)
	reTimeOnly  = lazyre.New(`^[\[\s]{0,4}()()()()()(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?`)
	reGlog      = lazyre.New(`^[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d+)`)
	reEvalWord  = lazyre.New(`(?i)(?:^|[^a-z])(?:val|valid|validation|validating|validate|eval|evaluating|evaluation|evaluate|test|testing|predict|predicting|prediction|inference|sanity)(?:[^a-z]|$)|mAP|Class\s+Images`)
	reUtilWord  = lazyre.New(`(?i)loading|download|upload|\bmap\b|tokeniz|preprocess|shards|scanning|caching|generating|extract|filter|building|compil|converting|sharding|resolving|fetching|saving`)
	reError     = lazyre.New(`(?i)traceback \(most recent call last\)|\b(?:error|exception)\b|out of memory|segmentation fault|core dumped|\bkilled\b|watchdog caught|nccl.{0,40}timeout|\bfatal\b|unhandled`)
)

// parseLine extracts what a cleaned line says about progress.
func parseLine(text string) lineInfo {
	var info lineInfo
	lower := strings.ToLower(text)
	if !hasDigit(text) {
		info.isError = looksLikeError(text, lower)
		return info
	}
	s := &info.s
	s.text = text
	parseTimestamp(text, s)

	counterAt := parseStep(text, lower, s)
	if counterAt >= 0 {
		s.desc = text[:counterAt]
	} else {
		s.desc = text
	}

	if m := findIf(strings.Contains(text, "<"), reTqdm(), text); m != nil {
		s.bar, s.tqdm = true, true
		if v, ok := parseClock(m[1]); ok {
			s.clock, s.hasClock = v, true
		}
		if v, ok := parseClock(m[2]); ok {
			s.eta, s.hasETA = v, true
		}
		if m[3] != "" && m[3] != "?" {
			applyRate(s, m[3], m[5])
		}
	} else if counterAt >= 0 && (reBar().MatchString(text) || richBar(text)) {
		s.bar = true
	}
	if s.timeKind == kindNone {
		for _, e := range reExplicit {
			if !containsAny(lower, e.needles...) {
				continue
			}
			m := e.re().FindStringSubmatchIndex(text)
			if m == nil || (m[3] < len(text) && text[m[3]] == ':') {
				continue
			}
			if v, ok := seconds(text[m[2]:m[3]], group(text, m, 2), e.unit); ok {
				s.stepTime, s.timeKind = v, kindExplicit
				break
			}
		}
	}
	if s.timeKind == kindNone && s.hasStep && containsAny(lower, "time", "dt", "seconds") {
		for _, loc := range reBareTime().FindAllStringSubmatchIndex(text, -1) {
			if loc[3] < len(text) && text[loc[3]] == ':' {
				continue
			}
			if v, ok := seconds(text[loc[2]:loc[3]], group(text, loc, 2), "s"); ok {
				s.stepTime, s.timeKind = v, kindExplicit
				break
			}
		}
	}
	if s.timeKind == kindNone {
		if m := findIf(containsAny(lower, "/s", "s/i"), reRate(), text); m != nil {
			applyRate(s, m[1], m[2])
		} else if m := findIf(containsAny(lower, "ups", "per_sec", "it/s"), reRateKey(), text); m != nil {
			applyRate(s, m[2], "it/s")
		}
	}
	if m := findIf(!s.hasClock && strings.Contains(text, " / "), reRich(), text); m != nil {
		if v, ok := parseClock(m[1]); ok {
			s.clock, s.hasClock = v, true
		}
		if v, ok := parseClock(m[2]); ok {
			s.eta, s.hasETA = v, true
		}
	}
	if !s.hasETA {
		if m := findIf(containsAny(lower, "eta", "remaining"), reETA(), text); m != nil {
			if v, ok := parseDuration(m[1]); ok {
				s.eta, s.hasETA = v, true
			}
		}
	}
	if !s.hasClock {
		if m := findIf(strings.Contains(lower, "elapsed"), reElapsed(), text); m != nil {
			if v, ok := parseClock(m[1]); ok {
				s.clock, s.hasClock = v, true
			}
		}
	}
	for _, m := range findAllIf(strings.Contains(lower, "loss"), reLoss(), text) {
		if evalLike(strings.TrimSpace(m[1])) {
			continue
		}
		if v, err := strconv.ParseFloat(m[2], 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
			s.loss, s.hasLoss = v, true
			break
		}
	}
	if containsAny(lower, "/s", "tps", "wps", "per_sec", "persec", "throughput") {
		parseThroughput(text, s)
	}

	s.eval = evalLike(s.desc) || utilityLike(s.desc)
	s.summary = !s.hasStep && containsAny(lower, "train_runtime", "total time", "training time", "training speed")
	evidence := s.timeKind != kindNone || s.hasLoss || s.tput > 0 || s.hasETA || s.hasClock || s.bar
	info.progress = (s.hasStep && evidence) || s.timeKind != kindNone || s.tput > 0
	if !info.progress {
		info.isError = looksLikeError(text, lower)
	}
	return info
}

// findIf runs re only when the cheap test ok passed.
func findIf(ok bool, re *regexp.Regexp, text string) []string {
	if !ok {
		return nil
	}
	return re.FindStringSubmatch(text)
}

// richBar reports whether text has a Rich progress bar followed by its
// counter: "Epoch 3/9 ━━━━━━━━ 400/782 0:00:09 • 0:00:08 47.06it/s".
func richBar(text string) bool {
	return strings.Contains(text, "━") && reRichBar().MatchString(text)
}

// findAllIf runs re only when the cheap test ok passed.
func findAllIf(ok bool, re *regexp.Regexp, text string) [][]string {
	if !ok {
		return nil
	}
	return re.FindAllStringSubmatch(text, -1)
}

// containsAny reports whether s contains one of subs.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// evalLike reports whether text names an evaluation (validation, test,
// inference) rather than training.
func evalLike(text string) bool {
	l := strings.ToLower(text)
	return containsAny(l, "val", "eval", "test", "predict", "inference", "sanity", "map", "class") && reEvalWord().MatchString(text)
}

// utilityLike reports whether a bar description names work that is not
// training: loading, tokenising, downloading, saving...
func utilityLike(desc string) bool {
	l := strings.ToLower(desc)
	return containsAny(l, "load", "download", "upload", "map", "tokeniz", "preprocess", "shard", "scan", "cach", "generat", "extract", "filter", "build", "compil", "convert", "resolv", "fetch", "sav") && reUtilWord().MatchString(desc)
}

// looksLikeError reports whether a line that is not progress reads as an error.
func looksLikeError(text, lower string) bool {
	return containsAny(lower, "error", "exception", "traceback", "memory", "fault", "dumped", "killed", "watchdog", "timeout", "fatal", "unhandled") && reError().MatchString(text)
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			return true
		}
	}
	return false
}

// parseStep finds the step counter and returns where it starts, or -1.
func parseStep(text, lower string, s *sample) int {
	if strings.Contains(lower, "epoch") && strings.Contains(lower, "iter") {
		if m := reEpochIter().FindStringSubmatchIndex(text); m != nil {
			ep, _ := strconv.ParseInt(text[m[2]:m[3]], 10, 64)
			eps, _ := strconv.ParseInt(text[m[4]:m[5]], 10, 64)
			it, _ := strconv.ParseInt(text[m[6]:m[7]], 10, 64)
			its, _ := strconv.ParseInt(text[m[8]:m[9]], 10, 64)
			if ep >= 1 && its > 0 {
				s.step, s.total, s.hasStep = (ep-1)*its+it, eps*its, true
				return m[0]
			}
		}
	}
	var keyed [][]int
	if containsAny(lower, "step", "iter", "update", "batch") {
		keyed = reStepKey().FindAllStringSubmatchIndex(text, -1)
	}
	for _, m := range keyed {
		mult, ok := abbreviation(text, m[10], m[11])
		if !ok || (m[8] >= 0 && mult == 1) { // "5ms", or a fraction: "update": 4.53
			continue
		}
		if end := m[7]; m[8] < 0 && mult == 1 && end < len(text) && (isLetter(text[end]) || text[end] == '%') {
			continue
		}
		v, err := strconv.ParseFloat(text[m[6]:max(m[7], m[9])], 64)
		if err != nil {
			continue
		}
		s.step, s.hasStep = int64(v*mult), true
		if m[12] >= 0 {
			total, _ := strconv.ParseFloat(text[m[12]:m[13]], 64)
			if tm, ok := abbreviation(text, m[14], m[15]); ok {
				s.total = int64(total * tm)
			}
		}
		start := m[0]
		if m[4] >= 0 { // "Iteration (val) 0/21": the tag decides
			start = m[5]
		}
		return start
	}
	if !hasFraction(text) {
		return -1
	}
	res := []*regexp.Regexp{reBracket(), reBar()}
	if strings.Contains(text, "━") { // before reBar, which reads "Epoch 2/9 ━━━" as a counter
		res = []*regexp.Regexp{reBracket(), reRichBar(), reBar()}
	}
	for _, re := range res {
		if m := re.FindStringSubmatchIndex(text); m != nil {
			v, err1 := strconv.ParseInt(text[m[2]:m[3]], 10, 64)
			t, err2 := strconv.ParseInt(text[m[4]:m[5]], 10, 64)
			if err1 == nil && err2 == nil && t > 0 && v <= t {
				s.step, s.total, s.hasStep = v, t, true
				return m[0]
			}
		}
	}
	return -1
}

// abbreviation reads the multiplier of an abbreviated count such as
// "11K" or "1.2M" from the suffix at text[from:to] (absent when from < 0).
// It fails when a letter follows, as in "5ms" or "2Mb".
func abbreviation(text string, from, to int) (float64, bool) {
	if from < 0 {
		return 1, true
	}
	if to < len(text) && isLetter(text[to]) {
		return 0, false
	}
	switch text[from] {
	case 'k', 'K':
		return 1e3, true
	case 'M':
		return 1e6, true
	}
	return 0, false
}

// group returns submatch i of a FindStringSubmatchIndex result, or "".
func group(text string, m []int, i int) string {
	if m[2*i] < 0 {
		return ""
	}
	return text[m[2*i]:m[2*i+1]]
}

// hasFraction reports whether text has a counter such as "12/100" or "12 / 100".
func hasFraction(text string) bool {
	for i := strings.IndexByte(text, '/'); i >= 0; {
		j, k := i-1, i+1
		for j >= 0 && text[j] == ' ' {
			j--
		}
		for k < len(text) && text[k] == ' ' {
			k++
		}
		if j >= 0 && k < len(text) && isDigit(text[j]) && isDigit(text[k]) {
			return true
		}
		next := strings.IndexByte(text[i+1:], '/')
		if next < 0 {
			break
		}
		i += next + 1
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// applyRate sets the step time from a rate such as "1.41" "it/s".
func applyRate(s *sample, value, unit string) {
	v, err := strconv.ParseFloat(value, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) {
		return
	}
	u := strings.ToLower(unit)
	switch {
	case strings.HasPrefix(u, "s/"):
		s.stepTime, s.timeKind = v, kindRate
	case u == "it/s" || u == "its/s" || u == "steps/s" || u == "step/s" || u == "iter/s" || u == "batches/s" || u == "ba/s" || u == "batch/s":
		s.stepTime, s.timeKind = 1/v, kindRate
	default: // examples/s, tokens/s... on a bar: a throughput
		s.tput, s.tputUnit = v, normaliseUnit(strings.TrimSuffix(u, "/s"))
	}
}

// parseThroughput reads a tokens/s or samples/s figure.
func parseThroughput(text string, s *sample) {
	if s.tput > 0 {
		return
	}
	var val, mult, unit string
	if m := reTput().FindStringSubmatch(text); m != nil {
		val, mult, unit = m[2], m[3], m[1]
	} else if m := reTputVal().FindStringSubmatch(text); m != nil {
		val, mult, unit = m[1], m[2], m[3]
	} else {
		return
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(val, ",", ""), 64)
	if err != nil || v <= 0 {
		return
	}
	switch mult {
	case "k", "K":
		v *= 1e3
	case "M":
		v *= 1e6
	}
	s.tput, s.tputUnit = v, normaliseUnit(unit)
}

// normaliseUnit maps the many throughput spellings onto a few units.
func normaliseUnit(u string) string {
	u = strings.ToLower(u)
	switch {
	case strings.Contains(u, "tok") || u == "tps":
		return "tokens/s"
	case u == "wps" || strings.HasPrefix(u, "word"):
		return "words/s"
	case strings.Contains(u, "img") || strings.Contains(u, "image"):
		return "images/s"
	default:
		return "samples/s"
	}
}

// seconds converts a number with a unit ("ms", "s", "us"; def when empty).
func seconds(value, unit, def string) (float64, bool) {
	v, err := strconv.ParseFloat(value, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) {
		return 0, false
	}
	if unit == "" {
		unit = def
	}
	switch strings.ToLower(unit) {
	case "ms":
		v /= 1e3
	case "us", "µs":
		v /= 1e6
	}
	return v, v < 1e6
}

// parseClock reads "H:MM:SS" or "MM:SS" into seconds.
func parseClock(s string) (float64, bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	total := 0.0
	for _, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return 0, false
		}
		total = total*60 + float64(v)
	}
	return total, true
}

// parseDuration reads an ETA: a clock, "2 days, 3:04:05", "7s", "3m", "1h".
func parseDuration(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	days := 0.0
	if i := strings.Index(s, ","); i >= 0 {
		d, err := strconv.Atoi(strings.Fields(s[:i])[0])
		if err != nil {
			return 0, false
		}
		days, s = float64(d), strings.TrimSpace(s[i+1:])
	}
	if strings.Contains(s, ":") {
		v, ok := parseClock(s)
		return v + days*86400, ok
	}
	total := 0.0
	for _, f := range strings.Fields(s) {
		i := strings.IndexFunc(f, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
		if i <= 0 {
			return 0, false
		}
		v, err := strconv.ParseFloat(f[:i], 64)
		if err != nil {
			return 0, false
		}
		switch f[i:] {
		case "ms":
			v /= 1e3
		case "m":
			v *= 60
		case "h":
			v *= 3600
		}
		total += v
	}
	return total, true
}

// parseTimestamp reads a timestamp at the start of the line.
func parseTimestamp(text string, s *sample) {
	if len(text) > 64 {
		text = text[:64]
	}
	if strings.IndexByte(text, ':') < 0 {
		return
	}
	var y, mo, d, h, mi, sec int
	frac := ""
	if m := reGlog().FindStringSubmatch(text); m != nil {
		mo, d = atoi(m[1]), atoi(m[2])
		h, mi, sec, frac = atoi(m[3]), atoi(m[4]), atoi(m[5]), m[6]
	} else if m := firstMatch(text, reTimestamp(), reTimeOnly()); m != nil {
		switch {
		case m[1] != "":
			y, mo, d = atoi(m[1]), atoi(m[2]), atoi(m[3])
		case m[4] != "":
			mo, d = atoi(m[4]), atoi(m[5])
		}
		h, mi, sec, frac = atoi(m[6]), atoi(m[7]), atoi(m[8]), m[9]
	} else {
		return
	}
	if h > 23 || mi > 59 || sec > 60 || mo > 12 || d > 31 {
		return
	}
	if mo == 0 {
		mo, d = 1, 1
	}
	ns := 0
	if frac != "" {
		f, _ := strconv.ParseFloat("0."+frac, 64)
		ns = int(f * 1e9)
	}
	s.ts = time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC)
	s.hasTS, s.tsFine = true, frac != ""
}

// firstMatch returns the submatches of the first pattern that matches.
func firstMatch(text string, res ...*regexp.Regexp) []string {
	for _, re := range res {
		if m := re.FindStringSubmatch(text); m != nil {
			return m
		}
	}
	return nil
}

func atoi(s string) int {
	v, _ := strconv.Atoi(s)
	return v
}
