package failure

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/schedmate/schedmate/internal/logclass"
	"github.com/schedmate/schedmate/internal/logtext"
	"github.com/schedmate/schedmate/internal/shareddata"
)

// labeledLog is one log with its expected verdict.
type labeledLog struct {
	name      string
	data      []byte
	category  Category
	component string
	rootLine  int
}

// readManifest reads a manifest.tsv (file, source, category, component,
// root_line, ...) and the logs it names.
func readManifest(t *testing.T, dir string) []labeledLog {
	t.Helper()
	fh, err := os.Open(filepath.Join(dir, "manifest.tsv"))
	if err != nil {
		t.Fatalf("open manifest: %v", err)
	}
	defer fh.Close()
	r := csv.NewReader(fh)
	r.Comma = '\t'
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatalf("read manifest: %v", err)
	}
	var out []labeledLog
	for _, row := range rows[1:] {
		data, err := os.ReadFile(filepath.Join(dir, row[0]))
		if err != nil {
			t.Fatalf("read %s: %v", row[0], err)
		}
		root, _ := strconv.Atoi(row[4])
		out = append(out, labeledLog{name: row[0], data: data, category: Category(row[2]), component: row[3], rootLine: root})
	}
	return out
}

// scores are the figures reported for one corpus.
type scores struct {
	n, categoryOK               int
	tp, fp, fn                  int
	componentN, componentOK     int
	rootN, rootOK, rootExact    int
	noneN, noneOK               int
	linesClassified, totalLines int
	failures                    []string
	// inexact lists the logs whose category, component or root line is
	// not exactly the label.
	inexact []string
}

func (s scores) precision() float64 { return ratio(s.tp, s.tp+s.fp) }
func (s scores) recall() float64    { return ratio(s.tp, s.tp+s.fn) }
func (s scores) f1() float64 {
	p, r := s.precision(), s.recall()
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func evaluate(t *testing.T, logs []labeledLog) scores {
	t.Helper()
	var s scores
	for _, lg := range logs {
		f, err := logtext.NewFile(bytes.NewReader(lg.data), int64(len(lg.data)), lg.name)
		if err != nil {
			t.Fatalf("%s: %v", lg.name, err)
		}
		d, err := Diagnose(f, DefaultOptions())
		if err != nil {
			t.Fatalf("%s: %v", lg.name, err)
		}
		s.n++
		s.linesClassified += d.LinesClassified
		s.totalLines += bytes.Count(lg.data, []byte{'\n'})
		ok := d.Category == lg.category
		if ok {
			s.categoryOK++
		}
		switch {
		case lg.category == Infrastructure && d.Category == Infrastructure:
			s.tp++
		case lg.category == Infrastructure:
			s.fn++
		case d.Category == Infrastructure:
			s.fp++
		}
		if lg.component != "" {
			s.componentN++
			if d.Component == lg.component {
				s.componentOK++
			} else {
				ok = false
			}
		}
		if lg.rootLine > 0 {
			s.rootN++
			if d.Line == lg.rootLine {
				s.rootExact++
			}
			if d.Line > 0 && abs(d.Line-lg.rootLine) <= 10 {
				s.rootOK++
			} else {
				ok = false
			}
		}
		if lg.category == None {
			s.noneN++
			if d.Category == None {
				s.noneOK++
			}
		}
		verdict := fmt.Sprintf("%s: want %s/%s@%d got %s/%s@%d %q", lg.name,
			lg.category, lg.component, lg.rootLine, d.Category, d.Component, d.Line, truncate(d.Text, 100))
		if !ok {
			s.failures = append(s.failures, verdict)
		}
		if d.Category != lg.category || d.Component != lg.component || d.Line != lg.rootLine {
			s.inexact = append(s.inexact, verdict)
		}
	}
	return s
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func report(t *testing.T, name string, s scores) {
	t.Helper()
	t.Logf("%-16s logs=%3d category=%.3f infraP=%.3f infraR=%.3f infraF1=%.3f component=%.3f root<=10=%.3f root-exact=%.3f none=%d/%d lines classified=%d/%d",
		name, s.n, ratio(s.categoryOK, s.n), s.precision(), s.recall(), s.f1(),
		ratio(s.componentOK, s.componentN), ratio(s.rootOK, s.rootN), ratio(s.rootExact, s.rootN), s.noneOK, s.noneN, s.linesClassified, s.totalLines)
	for _, f := range s.failures {
		t.Logf("  miss %s", f)
	}
}

// floors are the least figures a corpus must reach.
type floors struct{ category, f1, component, root float64 }

func assertFloors(t *testing.T, name string, s scores, fl floors) {
	t.Helper()
	if got := ratio(s.categoryOK, s.n); got < fl.category {
		t.Errorf("%s: category accuracy %.3f < %.3f", name, got, fl.category)
	}
	if s.f1() < fl.f1 {
		t.Errorf("%s: infrastructure F1 %.3f < %.3f", name, s.f1(), fl.f1)
	}
	if got := ratio(s.componentOK, s.componentN); got < fl.component {
		t.Errorf("%s: component accuracy %.3f < %.3f", name, got, fl.component)
	}
	if got := ratio(s.rootOK, s.rootN); got < fl.root {
		t.Errorf("%s: root within 10 lines %.3f < %.3f", name, got, fl.root)
	}
	if s.noneOK != s.noneN {
		t.Errorf("%s: %d of %d successful jobs got a failure verdict", name, s.noneN-s.noneOK, s.noneN)
	}
}

// progressFiller returns n raw training-progress lines taken from the real
// step-time logs, with benign warnings and errors sprinkled into the first
// half the way healthy jobs print them.
func progressFiller(t *testing.T, n int) [][]byte {
	t.Helper()
	dir := shareddata.Dir(t, "steptime")
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(files) == 0 {
		t.Skipf("no step-time logs in %s", dir)
	}
	var progress [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		for _, raw := range bytes.Split(data, []byte{'\n'}) {
			if logclass.Line(logtext.Clean(raw)) == logclass.Progress {
				progress = append(progress, bytes.TrimRight(raw, "\r"))
			}
		}
	}
	benign := []string{
		"/usr/lib/python3/dist-packages/torch/utils/checkpoint.py:460: UserWarning: torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False explicitly.",
		"[W socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:29500 (errno: 97 - Address family not supported by protocol).",
		"gpu07:1234:1301 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
		"gpu07:1234:1301 [0] NCCL WARN NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
		"{'loss': 2.3112, 'mean_squared_error': 0.0412, 'error_rate': 0.118, 'epoch': 0.42}",
		"wandb: ERROR Error while calling W&B API: context deadline exceeded (<Response [500]>)",
		"wandb: Network error (ReadTimeout), entering retry loop.",
		"FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.",
		"Some weights of the model checkpoint were not used when initializing BertModel: ['cls.predictions.bias']",
		"[2024-05-02 10:11:12,345] [WARNING] [stage3.py:1898:step] 4 pytorch allocator cache flushes since last step.",
	}
	out := make([][]byte, 0, n)
	for i := 0; len(out) < n; i++ {
		if i%97 == 13 && len(out) < n/2 {
			out = append(out, []byte(benign[(i/97)%len(benign)]))
			continue
		}
		out = append(out, progress[i%len(progress)])
	}
	return out
}

// embed puts each log after the filler lines, shifting its root line.
func embed(logs []labeledLog, filler [][]byte) []labeledLog {
	head := append(bytes.Join(filler, []byte{'\n'}), '\n')
	out := make([]labeledLog, len(logs))
	for i, lg := range logs {
		lg.data = append(append([]byte{}, head...), lg.data...)
		if lg.rootLine > 0 {
			lg.rootLine += len(filler)
		}
		lg.name = "embedded/" + lg.name
		out[i] = lg
	}
	return out
}

func TestSharedCorpus(t *testing.T) {
	logs := readManifest(t, shareddata.Dir(t, "failures"))
	s := evaluate(t, logs)
	report(t, "shared", s)
	assertFloors(t, "shared", s, floors{category: 0.9, f1: 0.9, component: 0.9, root: 0.85})

	hard := embed(logs, progressFiller(t, 5000))
	h := evaluate(t, hard)
	report(t, "embedded", h)
	assertFloors(t, "embedded", h, floors{category: 0.9, f1: 0.9, component: 0.9, root: 0.85})
}

func TestHoldoutCorpus(t *testing.T) {
	logs := readManifest(t, filepath.Join("testdata", "holdout"))
	s := evaluate(t, logs)
	report(t, "holdout", s)
	assertFloors(t, "holdout", s, floors{category: 0.8, f1: 0.85, component: 0.8, root: 0.8})

	hard := embed(logs, progressFiller(t, 5000))
	h := evaluate(t, hard)
	report(t, "holdout-embedded", h)
	assertFloors(t, "holdout-embedded", h, floors{category: 0.8, f1: 0.85, component: 0.8, root: 0.8})
}

// TestRealRunsCorpus holds the logs of real failing runs to exact verdicts:
// category, component and root line, alone and after 5000 progress lines.
func TestRealRunsCorpus(t *testing.T) {
	logs := readManifest(t, filepath.Join("testdata", "realruns"))
	check := func(name string, s scores) {
		t.Helper()
		report(t, name, s)
		for _, v := range s.inexact {
			t.Errorf("%s: inexact verdict %s", name, v)
		}
	}
	check("realruns", evaluate(t, logs))
	check("realruns-embedded", evaluate(t, embed(logs, progressFiller(t, 5000))))
}
