// Package logclass sorts cleaned log lines, and chunks of lines, into the
// four classes the failure locator and the metric tracker work with: error,
// warning, training progress and other. The rules are deterministic
// signatures compiled once; they know the usual traps, such as "error"
// inside a loss name or a path, benign NCCL warnings and log levels.
package logclass

import (
	"strings"

	"github.com/schedmate/schedmate/internal/lazyre"
	"github.com/schedmate/schedmate/internal/logtext"
)

// Class is what a line or a chunk of lines says about the job.
type Class int

// The classes, ordered so that a chunk takes the highest class of its lines
// except that progress outranks warning and other.
const (
	Other Class = iota
	Warning
	Progress
	Error
)

// String returns the lower-case class name.
func (c Class) String() string {
	switch c {
	case Error:
		return "error"
	case Warning:
		return "warning"
	case Progress:
		return "progress"
	default:
		return "other"
	}
}

var (
	// exceptionLine is the last line of a Python traceback or a raised
	// exception: "RuntimeError: ...", "torch.OutOfMemoryError: ...".
	exceptionLine = lazyre.New(`^(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Interrupt|Fault)|Exception|KeyboardInterrupt|SystemExit)(?::|$|\s*\()`)
	warningClass  = lazyre.New(`\b[A-Z]\w*Warning:`)
	// errorLevel matches log levels and markers that mean an error was
	// reported: "ERROR", "[E socket.cpp:793]", glog "E0426"/"F0426",
	// "srun: error:", "Segmentation fault".
	errorLevel = lazyre.New(`(?:^|[\s\[|(<:])(?:ERROR|FATAL|CRITICAL|PANIC)(?:$|[\s\]|):>-])|^\[?[EF]\d{4} \d\d:\d\d|^\[?[EF]\d{4}\s|^\[E[\s\d]|\[(?:E|error|Error)\]|(?:^|\s)error:|^Error[: ]|Traceback \(most recent call last\)|Segmentation fault|core dumped|(?:^|\s)Aborted\b|\bBus error\b|^Killed\b|\bFatal (?:error|Python error)|\bterminate called\b|\bCheck failed\b`)
	// failureWords are phrases that state a failure in lines without a
	// log level.
	failureWords = lazyre.New(`(?i)\b(?:failed|failure|fatal|unrecoverable|uncorrectable|timed out|unreachable|refused|reset by peer|no such file|not found|cannot|can't|could not|unable to|denied|exited with exit code|killed|out of memory|no space left|fallen off|exception|with error|error \d+)\b`)
	// warnLevel matches warning log levels.
	warnLevel = lazyre.New(`(?:^|[\s\[|(<:])(?:WARN|WARNING|Warning)(?:$|[\s\]|):>-])|^\[?W\d{4} \d\d:\d\d|^\[W[\s\d]|\[(?:W|warn(?:ing)?)\]|(?i)\bdeprecat`)
	// infoLevel matches informational log levels; such lines are errors only
	// when they carry an exception or a strong error marker.
	infoLevel = lazyre.New(`(?:^|[\s\[|(<:])(?:INFO|DEBUG|TRACE)(?:$|[\s\]|):>-])|^\[?I\d{4} \d\d:\d\d|\[[ID]\]`)
	// benignNCCL are NCCL warnings printed by healthy jobs.
	benignNCCL = lazyre.New(`(?i)NCCL WARN (?:NET/Plugin|Could not find|Cuda failure 'peer access is not supported|.*NCCL_\w+ set by environment|.*is deprecated|.*falling back|.*Ignoring)`)
	// progressCounter matches a step, iteration or epoch counter.
	progressCounter = lazyre.New(`(?i)(?:\b|_)(?:iter(?:ation)?s?|steps?|epoch|batch|global_step)\b\s*[:=\[#(]?\s*\d+|'epoch':|'step':|\[\d+/\d+\]|\bEpoch\s*\[?\d+`)
)

// DeviceAssertionPattern matches the line a GPU kernel prints when one of
// its device-side assertions fails, for each failing thread: CUDA's
// "<file>.cu:<n>: <kernel>: block: [x,y,z], thread: [x,y,z] Assertion
// `<condition>` failed." and HIP's "<file>.hip:<n>: <kernel>: Device-side
// assertion `<condition>' failed.". The kernel part may hold spaces,
// brackets and colons (templated kernels), so the pattern keys on the
// fixed text after it.
const DeviceAssertionPattern = "block: \\[\\d+, ?\\d+, ?\\d+\\], thread: \\[\\d+, ?\\d+, ?\\d+\\] Assertion `.*` failed|Device-side assertion `.*' failed"

var deviceAssertion = lazyre.New(DeviceAssertionPattern)

// isDeviceAssertion reports whether a line (without launcher prefix) is a
// failed device-side assertion of a GPU kernel.
func isDeviceAssertion(s string) bool {
	return strings.Contains(s, "ssertion `") && deviceAssertion().MatchString(s)
}

// maxMatchBytes bounds how much of a line the rules look at; what a line
// says about errors and progress sits at its start.
const maxMatchBytes = 1024

// Line classifies one cleaned line (as returned by logtext.Clean). A launcher
// prefix such as "[rank3]:" is ignored.
func Line(text string) Class {
	_, rest := logtext.SplitRankPrefix(text)
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return Other
	}
	if len(rest) > maxMatchBytes {
		rest = rest[:maxMatchBytes]
	}
	if IsError(rest) {
		return Error
	}
	if IsProgress(rest) {
		return Progress
	}
	if isWarning(rest) {
		return Warning
	}
	return Other
}

// errorHints are lower-case fragments of which an error line holds at least
// one; lines without any skip the regular expressions.
var errorHints = []string{"error", "fail", "fatal", "exception", "traceback", "fault", "abort", "killed",
	"critical", "panic", "unrecoverable", "uncorrectable", "timed out", "unreachable", "refused",
	"reset by peer", "no such file", "not found", "cannot", "can't", "could not", "unable to", "denied",
	"exited with", "out of memory", "no space", "fallen off", "core dumped", "terminate called",
	"nccl warn", "interrupt", "systemexit"}

func hasAny(lower string, hints []string) bool {
	for _, h := range hints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

// glogError reports a glog/absl error or fatal line: "E0426 17:52:54.0 ...".
func glogError(s string) bool {
	s = strings.TrimLeft(s, "`[")
	return len(s) > 5 && (s[0] == 'E' || s[0] == 'F') && isDigits(s[1:5])
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// IsError reports whether a line (without launcher prefix) reports an error.
// Words such as "error_rate", "mean_squared_error" or "/errors/" do not count.
func IsError(s string) bool {
	lower := strings.ToLower(s)
	if !hasAny(lower, errorHints) && !glogError(s) && !strings.HasPrefix(s, "[E") {
		return false
	}
	if isDeviceAssertion(s) {
		// its condition is arbitrary code that may look like progress
		return true
	}
	if warningClass().MatchString(s) {
		return false
	}
	if exceptionLine().MatchString(s) || errorLevel().MatchString(s) {
		return !benignError(lower)
	}
	if strings.Contains(s, "NCCL WARN") {
		return !benignNCCL().MatchString(s)
	}
	if infoLevel().MatchString(s) || warnLevel().MatchString(s) {
		return false
	}
	return failureWords().MatchString(s) && !IsProgress(s)
}

// benignError filters marker matches that are not failures, such as a
// summary that counts zero errors.
func benignError(l string) bool {
	return strings.Contains(l, "0 errors") || strings.Contains(l, "errors: 0") ||
		strings.Contains(l, "no errors")
}

// rateUnits follow a number in throughput and tqdm progress: "1.41it/s".
var rateUnits = []string{"it/s", "s/it", "ms/step", "s/step", "ms/it", "samples/s", "tokens/s", "token/s",
	"tok/s", "img/s", "images/s", "sequences/s", "steps/s"}

// progressMetrics are lower-case names of figures that progress lines report
// next to a step counter.
var progressMetrics = []string{"loss", "lr", "learning_rate", "learning rate", "time", "eta", "throughput",
	"acc", "ppl", "grad_norm", "grad norm", "tflop", "tokens", "samples", "runtime"}

// IsProgress reports whether a line reports training progress.
func IsProgress(s string) bool {
	if !strings.ContainsAny(s, "0123456789") {
		return false
	}
	if strings.Contains(s, "%|") || hasRate(s) || strings.Contains(s, "/step") ||
		(strings.Contains(s, "/") && (strings.Contains(s, " [=") || strings.Contains(s, " [>"))) {
		return true
	}
	lower := strings.ToLower(s)
	return hasAny(lower, progressMetrics) && progressCounter().MatchString(s)
}

// hasRate reports a rate unit right after a number, as in "2.98s/it".
func hasRate(s string) bool {
	for _, u := range rateUnits {
		from := 0
		for {
			i := strings.Index(s[from:], u)
			if i < 0 {
				break
			}
			i += from
			j := i
			if j > 0 && s[j-1] == ' ' {
				j--
			}
			if j > 0 && s[j-1] >= '0' && s[j-1] <= '9' {
				return true
			}
			from = i + len(u)
		}
	}
	return false
}

func isWarning(s string) bool {
	lower := strings.ToLower(s)
	if !strings.Contains(lower, "warn") && !strings.Contains(lower, "deprecat") && !strings.Contains(s, "[W") &&
		!(len(s) > 5 && s[0] == 'W' && isDigits(s[1:5])) {
		return false
	}
	return warningClass().MatchString(s) || warnLevel().MatchString(s) || strings.Contains(s, "NCCL WARN")
}

// Chunk classifies a chunk of cleaned lines (the paper uses 20): error when
// any line is an error, else progress when any line is progress, else
// warning when any line is a warning, else other.
func Chunk(lines []string) Class {
	best := Other
	for _, l := range lines {
		c := Line(l)
		if c == Error {
			return Error
		}
		if c > best {
			best = c
		}
	}
	return best
}
