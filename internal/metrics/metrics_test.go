package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func extractString(t *testing.T, log string, opts Options) *Report {
	t.Helper()
	rep, err := Extract(strings.NewReader(log), int64(len(log)), opts)
	if err != nil {
		t.Fatalf("extract: %v", err)
	}
	return rep
}

func TestExtractLines(t *testing.T) {
	tests := []struct {
		name     string
		log      string
		stepTime float64 // 0 = unknown
		step     int64   // -1 = unknown
		total    int64   // 0 = unknown
		loss     float64 // 0 = unknown
	}{
		{"empty", "", 0, -1, 0, 0},
		{"no digits", "hello\nworld\n", 0, -1, 0, 0},
		{"nanoGPT", "iter 100: loss 2.3000, time 45.20ms, mfu 12.00%\n", 0.0452, 100, 0, 2.3},
		{"megatron", " iteration      100/    1000 | elapsed time per iteration (ms): 1031.7 | lm loss: 2.345E+00 |\n", 1.0317, 100, 1000, 2.345},
		{"tqdm it/s", "  5%|▌         | 50/1000 [00:20<06:20,  2.50it/s]\n", 0.4, 50, 1000, 0},
		{"tqdm s/it", "50/1000 [02:20<46:20,  2.93s/it]\n", 2.93, 50, 1000, 0},
		{"keras", "422/422 [==============================] - 16s 37ms/step - loss: 0.0406\n", 0.037, 422, 422, 0.0406},
		{"fairseq json", `{"epoch": 5, "update": 4.534, "loss": "0.256", "ups": "7.07", "num_updates": "3600"}` + "\n", 1 / 7.07, 3600, 0, 0.256},
		{"verl", "step:21 - actor/pg_loss:0.1 - timing_s/step:11.029 - training/global_step:21\n", 11.029, 21, 0, 0.1},
		{"yolox", "epoch: 70/300, iter: 40/47, mem: 1756Mb, iter_time: 0.087s, data_time: 0.000s, total_loss: 3.0\n", 0.087, 3283, 14100, 3.0},
		{"validation only", "Validation: iteration 11/20\nValidation: iteration 12/20\n", 0, -1, 0, 0},
		{"elapsed is not a step time", "Progress on: -/30000 rate:- remaining:? elapsed:00:06\n", 0, -1, 0, 0},
		{"cumulative clock differenced", "step 10/100 elapsed: 0:00:30\nstep 20/100 elapsed: 0:01:00\n", 3, 20, 100, 0},
		{"eta over remaining steps", "237/422 [=====>....] - ETA: 37s - loss: 0.04\n", 0.2, 237, 422, 0.04},
		{"abbreviated step", "step:11K - actor/pg_loss:0.1 - timing_s/step:2.5\n", 2.5, 11000, 0, 0.1},
		{"abbreviated step and total", "Step 1.2M/2M | loss 2.1 | step_time 0.5s\n", 0.5, 1200000, 2000000, 2.1},
		{"a unit after the step is no abbreviation", "step 5ms\n", 0, -1, 0, 0},
		{"binary noise", "\x01\xff\xfe step \x00 9\n", 0, -1, 0, 0},
		{"rich bar", "Epoch 0/-2 ━━━━━━━━━━━━━━━━ 400/400 0:00:09 •        47.06it/s train_loss: 9.141\n", 1 / 47.06, 400, 400, 9.141},
		{"rich bar half drawn", "Epoch 2/9  ━━━━━━━━╸━━━━━━━ 391/782 0:00:10 • 0:00:11 37.30it/s v_num: 0\n", 1 / 37.30, 391, 782, 0},
		{"epoch summary after steps", "iter 10: loss 1.0, time 100.0ms\nEpoch: [0] Total time: 0:00:02 (0.2 s / it)\n", 0.1, 10, 0, 1},
		{"run summary alone", "{'train_runtime': '9.951', 'train_steps_per_second': '30.15', 'train_loss': '9.017'}\n", 1 / 30.15, -1, 0, 9.017},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := extractString(t, tt.log, Options{})
			switch {
			case tt.stepTime == 0 && rep.StepTimeS != nil:
				t.Errorf("step time = %v, want unknown", *rep.StepTimeS)
			case tt.stepTime != 0 && (rep.StepTimeS == nil || !near(*rep.StepTimeS, tt.stepTime)):
				t.Errorf("step time = %v, want %v", fmtPtr(rep.StepTimeS), tt.stepTime)
			}
			if got := valueOr(rep.Step, -1); got != tt.step {
				t.Errorf("step = %d, want %d", got, tt.step)
			}
			if got := valueOr(rep.TotalSteps, 0); got != tt.total {
				t.Errorf("total = %d, want %d", got, tt.total)
			}
			if tt.loss != 0 && (rep.Loss == nil || !near(*rep.Loss, tt.loss)) {
				t.Errorf("loss = %v, want %v", fmtPtr(rep.Loss), tt.loss)
			}
		})
	}
}

func near(a, b float64) bool { return a > b*0.999 && a < b*1.001 }

func valueOr(v *int64, def int64) int64 {
	if v == nil {
		return def
	}
	return *v
}

func TestTrendAndETA(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		ms := 100.0
		if i > 20 {
			ms = 250
		}
		b.WriteString("iter " + strconv.Itoa(i) + "/1000: loss 1.0, time " + strconv.Itoa(int(ms)) + ".0ms\n")
	}
	rep := extractString(t, b.String(), Options{})
	if !rep.Slowdown || rep.SpeedRatio == nil || *rep.SpeedRatio > 0.5 {
		t.Errorf("slowdown = %v ratio %v, want a slowdown", rep.Slowdown, fmtPtr(rep.SpeedRatio))
	}
	if rep.ETAS == nil || !near(*rep.ETAS, 970*0.25) {
		t.Errorf("eta = %v, want %v", fmtPtr(rep.ETAS), 970*0.25)
	}
	if len(rep.RecentStepTimes) != 30 || len(rep.ProgressLines) != maxReportLines {
		t.Errorf("series %d lines %d", len(rep.RecentStepTimes), len(rep.ProgressLines))
	}
	steady := extractString(t, strings.ReplaceAll(b.String(), "250.0ms", "100.0ms"), Options{})
	if steady.Slowdown {
		t.Errorf("steady run flagged as slowdown (ratio %v)", fmtPtr(steady.SpeedRatio))
	}
}

// tqdmBars renders bar refreshes of total at a rate, from step from to to,
// the way tqdm writes them to a file; below draws them under another bar
// (position 1): a newline before, a cursor-up after.
func tqdmBars(from, to, total int, rate float64, below bool) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if below {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "\r%3d%%|███       | %d/%d [00:10<00:20, %5.2fit/s]", 100*i/total, i, total, rate)
		if below {
			b.WriteString("\x1b[A")
		}
	}
	return b.String()
}

func TestBarBelowAnotherBar(t *testing.T) {
	tests := []struct {
		name     string
		log      string
		stepTime float64
		step     int64
		total    int64
	}{
		{"evaluation bar while training is unfinished", tqdmBars(1, 120, 300, 2.5, false) + tqdmBars(1, 35, 40, 20, true), 0.4, 120, 300},
		{"evaluation bar, then its summary", tqdmBars(1, 120, 300, 2.5, false) + tqdmBars(1, 40, 40, 20, true) + "\n{'eval_loss': 1.9, 'eval_runtime': 2.0}\n", 0.4, 120, 300},
		{"inner training bar below an epoch bar", tqdmBars(1, 3, 10, 0.01, false) + tqdmBars(1, 250, 500, 2, true), 0.5, 250, 500},
		{"training bar below a finished bar", tqdmBars(300, 300, 300, 2.5, false) + tqdmBars(1, 35, 40, 20, true), 0.05, 35, 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := extractString(t, tt.log, Options{})
			if rep.StepTimeS == nil || math.Abs(*rep.StepTimeS-tt.stepTime) > tt.stepTime/100 {
				t.Errorf("step time = %v, want %v", fmtPtr(rep.StepTimeS), tt.stepTime)
			}
			if valueOr(rep.Step, -1) != tt.step || valueOr(rep.TotalSteps, 0) != tt.total {
				t.Errorf("step = %s/%s, want %d/%d", fmtInt(rep.Step), fmtInt(rep.TotalSteps), tt.step, tt.total)
			}
		})
	}
}

func TestTqdmCloseSummary(t *testing.T) {
	const close = "\r100%|██████████| 300/300 [00:09<00:00, 30.00it/s]\n"
	tests := []struct {
		name     string
		log      string
		stepTime float64
	}{
		{"close repeats the last update", tqdmBars(1, 300, 300, 40, false) + close, 0.025},
		{"last update below the total (mininterval)", tqdmBars(1, 297, 300, 40, false) + close, 0.025},
		{"one slow last update", tqdmBars(1, 299, 300, 40, false) + tqdmBars(300, 300, 300, 35, false) + close, 0.025},
		{"one slow last update, a log record after it", tqdmBars(1, 299, 300, 40, false) + tqdmBars(300, 300, 300, 35, false) +
			"\r    \r{'loss': '9.0', 'epoch': '1'}\n" + tqdmBars(300, 300, 300, 35, false) + close, 0.025},
		{"close after an evaluation bar", tqdmBars(1, 300, 300, 40, false) + tqdmBars(1, 20, 20, 100, true) + close, 1 / 30.0},
		{"start line and close only", "\r  0%|          | 0/300 [00:00<?, ?it/s]" + close, 1 / 30.0},
		{"close alone", close, 1 / 30.0},
		{"closes of successive epochs", "\r100%|██████████| 300/300 [00:15<00:00, 20.00it/s]\nepoch 1 done\n" + close, 1 / 30.0},
		{"closed while another bar's update precedes", tqdmBars(1, 50, 60, 40, false) + close, 1 / 30.0},
		{"run summary after the bar", tqdmBars(1, 300, 300, 40, false) + "\r    \r{'train_runtime': '9.951', 'train_steps_per_second': '30.15'}\n", 0.025},
		{"run summary, then the close", tqdmBars(1, 300, 300, 40, false) + "\r    \r{'train_runtime': '9.951', 'train_steps_per_second': '30.15'}\n" + tqdmBars(300, 300, 300, 40, false) + close, 0.025},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := extractString(t, tt.log, Options{})
			if rep.StepTimeS == nil || !near(*rep.StepTimeS, tt.stepTime) {
				t.Errorf("step time = %v, want %v", fmtPtr(rep.StepTimeS), tt.stepTime)
			}
			if valueOr(rep.Step, -1) != 300 || valueOr(rep.TotalSteps, 0) != 300 {
				t.Errorf("step = %s/%s, want 300/300", fmtInt(rep.Step), fmtInt(rep.TotalSteps))
			}
		})
	}
}

func TestRestartedBarWarmup(t *testing.T) {
	epoch := func(n, from, to int, rate float64) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "\rEpoch %d: %3d%%|█    | %d/100 [00:01<00:02, %5.2fit/s, loss=1.0]", n, i, i, rate)
		}
		return b.String()
	}
	tests := []struct {
		name     string
		log      string
		stepTime float64
		step     int64
	}{
		{"a new epoch's first updates read the last epoch's rate", epoch(0, 1, 100, 40) + "\n" + epoch(1, 0, 0, 0) + epoch(1, 1, 8, 12), 0.025, 8},
		{"past its warm-up the new epoch's own rate", epoch(0, 1, 100, 40) + "\n" + epoch(1, 1, 12, 50), 0.02, 12},
		{"the first bar of the run has only its own rate", epoch(0, 1, 8, 12), 1 / 12.0, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := extractString(t, tt.log, Options{})
			if rep.StepTimeS == nil || !near(*rep.StepTimeS, tt.stepTime) {
				t.Errorf("step time = %v, want %v", fmtPtr(rep.StepTimeS), tt.stepTime)
			}
			if valueOr(rep.Step, -1) != tt.step {
				t.Errorf("step = %s, want %d", fmtInt(rep.Step), tt.step)
			}
			if rep.Slowdown {
				t.Error("a new epoch's warm-up was reported as a slowdown")
			}
		})
	}
}

func TestErrorLineAfterProgress(t *testing.T) {
	log := "iter 1: loss 1.0, time 10ms\nRuntimeError: CUDA error: an illegal memory access was encountered\nTraceback (most recent call last):\n"
	rep := extractString(t, log, Options{})
	if !strings.HasPrefix(rep.ErrorLine, "RuntimeError") {
		t.Errorf("error line = %q", rep.ErrorLine)
	}
}

func TestExtractFileStalled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.out")
	if err := os.WriteFile(path, []byte("iter 5: loss 1.0, time 1000.0ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	rep, err := ExtractFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Stalled {
		t.Error("log silent for an hour at 1 s/step is not stalled")
	}
	fresh, err := ExtractFile(path, Options{Now: old.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Stalled {
		t.Error("fresh log flagged as stalled")
	}
}

func TestExtractFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ExtractFile(filepath.Join(dir, "missing.out"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	if _, err := ExtractFile(dir, Options{}); !errors.Is(err, ErrNotRegular) {
		t.Errorf("directory: err = %v", err)
	}
}

func TestBinaryAndShrinkingLogs(t *testing.T) {
	bin := string(make([]byte, 4096)) + "\x7fELF"
	if _, err := Extract(strings.NewReader(bin), int64(len(bin)), Options{}); !errors.Is(err, ErrBinary) {
		t.Errorf("binary log: err = %v, want ErrBinary", err)
	}
	// A reader that claims more bytes than it has is a log truncated while read.
	if _, err := Extract(strings.NewReader("iter 1: loss 1"), 1<<20, Options{}); err == nil {
		t.Error("short read gave no error")
	}
}

func TestOneHugeLineIsBounded(t *testing.T) {
	huge := bytes.Repeat([]byte("x"), 50<<20)
	huge = append(huge, []byte("\riter 7: loss 1.0, time 20.0ms\n")...)
	rep, err := Extract(bytes.NewReader(huge), int64(len(huge)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.StepTimeS == nil || !near(*rep.StepTimeS, 0.02) {
		t.Errorf("step time = %v, want 0.02", fmtPtr(rep.StepTimeS))
	}
}

func TestFinalMetrics(t *testing.T) {
	rep := extractString(t, "step 10/100 | loss 2.5 | step_time 0.5s | 1.2k tok/s\n", Options{})
	fm := rep.FinalMetrics()
	if fm == nil || fm.StepTimeS != 0.5 || fm.Step != 10 || fm.TotalSteps != 100 || fm.Loss == nil || *fm.Loss != 2.5 || fm.Throughput != 1200 || fm.ThroughputUnit != "tokens/s" {
		t.Errorf("final metrics = %+v", fm)
	}
	if extractString(t, "nothing here\n", Options{}).FinalMetrics() != nil {
		t.Error("final metrics of a log without progress should be nil")
	}
}

func FuzzExtract(f *testing.F) {
	f.Add([]byte("iter 100: loss 2.3, time 45.2ms\n"))
	f.Add([]byte("  5%|▌ | 50/1000 [00:20<06:20,  2.50it/s]\r  6%|▌ | 60/1000 [00:24<06:20,  2.50it/s]"))
	f.Add([]byte("[2024-01-01 10:00:00,123] step: 1 loss: 2\n[2024-01-01 10:00:01,123] step: 2 loss: 2\n"))
	f.Add([]byte("epoch: 1/3, iter: 2/4, iter_time: 1s, ETA: 1 day, 2:03:04\n"))
	f.Add([]byte("\r 99%|█▉| 299/300 [00:09<00:00, 32.29it/s]\r100%|██| 300/300 [00:09<00:00, 30.15it/s]\n"))
	f.Add([]byte("{'train_runtime': '9.951', 'train_steps_per_second': '30.15'}\nEpoch: [27] Total time: 0:02:15 (0.173881 s / it)\n"))
	f.Add([]byte("Epoch 0/-2 ━━━━━━━━╸━━━━━━━ 400/400 0:00:09 •  47.06it/s train_loss: 9.141\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Extract(bytes.NewReader(data), int64(len(data)), Options{ProgressLines: 5})
		if errors.Is(err, ErrBinary) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if rep.StepTimeS != nil && !(*rep.StepTimeS > 0) {
			t.Fatalf("non-positive step time %v", *rep.StepTimeS)
		}
	})
}
