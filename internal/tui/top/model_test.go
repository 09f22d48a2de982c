package top

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/schedmate/schedmate/internal/golden"
	"github.com/schedmate/schedmate/internal/metrics"
)

func ptr[T any](v T) *T { return &v }

// fixture is a snapshot with one job of each kind the view distinguishes.
func fixture() Snapshot {
	at := time.Date(2025, 3, 2, 10, 15, 0, 0, time.UTC)
	return Snapshot{Time: at, Rows: []Row{
		{JobID: "4242", Name: "llama-8b-pretrain", User: "alice", Nodes: "gpu[01-04]", GPUs: 32, Elapsed: 5*time.Hour + 7*time.Minute, Log: "/scratch/alice/slurm-4242.out",
			Progress: &metrics.Report{StepTimeS: ptr(4.729), Source: "timestamps", Step: ptr[int64](3120), TotalSteps: ptr[int64](10000),
				Throughput: ptr(55432.0), ThroughputUnit: "tokens/s", ETAS: ptr(6880 * 4.729), Loss: ptr(2.31),
				RecentStepTimes:  []float64{4.71, 4.72, 4.73, 4.72, 4.74, 4.73},
				LastProgressLine: "step: 3120  loss:  2.3100  tps: 6,929", ProgressLines: []string{"step: 3110  loss:  2.3200  tps: 6,931", "step: 3120  loss:  2.3100  tps: 6,929"}}},
		{JobID: "4250", Name: "resnet50", User: "bob", Nodes: "gpu07", GPUs: 1, Elapsed: 42 * time.Minute, Log: "/home/bob/r50.out",
			Progress: &metrics.Report{StepTimeS: ptr(0.712), Source: "rate", Step: ptr[int64](2210), TotalSteps: ptr[int64](5005), ETAS: ptr(2795 * 0.712),
				RecentStepTimes: []float64{0.3, 0.31, 0.3, 0.7, 0.71, 0.712}, SpeedRatio: ptr(0.43), Slowdown: true,
				LastProgressLine: "Train Epoch: 3: 44%|████ | 2210/5005 [26:13<33:10, 1.40it/s]"}},
		{JobID: "4261", Name: "verl-grpo", User: "carol", Nodes: "gpu[09-10]", GPUs: 16, Elapsed: 26*time.Hour + 3*time.Minute, Log: "/scratch/carol/verl.out",
			Progress: &metrics.Report{StepTimeS: ptr(11.03), Source: "explicit", Step: ptr[int64](21), TotalSteps: ptr[int64](3746), ETAS: ptr(3725 * 11.03), Stalled: true,
				ErrorLine: "ray.exceptions.ActorUnavailableError: The actor is unavailable", LastProgressLine: "step:21 - timing_s/step:11.03"}},
		{JobID: "4270", Name: "data-prep", User: "alice", Nodes: "cpu03", Elapsed: 3 * time.Minute, Log: "/scratch/alice/prep.out", Progress: &metrics.Report{}},
		{JobID: "4281", Name: "sweep_lr_3e-4", User: "dave", Nodes: "gpu12", GPUs: 4, Elapsed: 10 * time.Second, Log: "/gone/slurm-4281.out",
			LogError: "open log /gone/slurm-4281.out: no such file or directory"},
	}}
}

func press(m tea.Model, keys ...string) tea.Model {
	for _, k := range keys {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		m, _ = m.Update(msg)
	}
	return m
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), []byte(got))
}

func TestViewGolden(t *testing.T) {
	tests := []struct {
		name   string
		width  int
		height int
		keys   []string
	}{
		{"view_80x24.golden", 80, 24, nil},
		{"view_sorted_eta.golden", 80, 24, []string{"s"}},
		{"view_filter.golden", 80, 24, []string{"/", "a", "l", "i", "enter"}},
		{"view_detail.golden", 80, 24, []string{"down", "down", "enter"}},
		{"view_wide_140x20.golden", 140, 20, nil},
		{"view_small_80x8.golden", 80, 8, []string{"down", "down", "down", "down"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m tea.Model = New(Options{Scope: "all jobs"})
			m, _ = m.Update(tea.WindowSizeMsg{Width: tt.width, Height: tt.height})
			m, _ = m.Update(SnapshotMsg(fixture()))
			m = press(m, tt.keys...)
			view := m.View()
			if n := strings.Count(view, "\n") + 1; n != tt.height {
				t.Errorf("view has %d lines, want %d", n, tt.height)
			}
			checkGolden(t, tt.name, view)
		})
	}
}

func TestQuitKey(t *testing.T) {
	m := New(Options{})
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	if cmd == nil {
		t.Fatal("q gave no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q does not quit")
	}
}

func TestEmptyAndErrorStates(t *testing.T) {
	var m tea.Model = New(Options{})
	if !strings.Contains(m.View(), "loading") {
		t.Error("no loading state")
	}
	m, _ = m.Update(SnapshotMsg{})
	if !strings.Contains(m.View(), "no running jobs") {
		t.Error("no empty state")
	}
	m, _ = m.Update(SnapshotMsg{Err: os.ErrDeadlineExceeded})
	if !strings.Contains(m.View(), "cannot list jobs") {
		t.Error("no error state")
	}
}

func TestWriteTableAndJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, fixture().Rows, 80); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "table_80.golden", b.String())
	b.Reset()
	if err := WriteJSON(&b, fixture().Rows); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "rows.json.golden", b.String())
	b.Reset()
	if err := WriteJSON(&b, nil); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("empty json = %q, %v", b.String(), err)
	}
}

func TestSparkline(t *testing.T) {
	tests := []struct {
		in   []float64
		want string
	}{
		{nil, ""},
		{[]float64{1}, ""},
		{[]float64{1, 1, 1}, "▁▁▁"},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8}, "▁▂▃▅▆█"},
	}
	for _, tt := range tests {
		if got := Sparkline(tt.in, 6); got != tt.want {
			t.Errorf("Sparkline(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
