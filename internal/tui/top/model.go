package top

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// Options configure the live view.
type Options struct {
	// Source reads one snapshot; it is called at start and every Interval.
	Source func(context.Context) Snapshot
	// Interval between refreshes (default 3s).
	Interval time.Duration
	// Scope describes whose jobs are shown ("jobs of alice", "all jobs").
	Scope string
	// Renderer styles the output; nil means no colour.
	Renderer *lipgloss.Renderer
	// DetailLines is how many progress lines the detail pane shows (default 6).
	DetailLines int
}

// SnapshotMsg delivers a new snapshot to the model.
type SnapshotMsg Snapshot

type tickMsg struct{}

// Model is the bubbletea model of `schedmate top`.
type Model struct {
	opts    Options
	styles  styles
	snap    Snapshot
	loaded  bool
	rows    []Row // filtered and sorted
	cursor  int
	sortKey SortKey
	filter  string
	editing bool
	detail  bool
	width   int
	height  int
}

type styles struct {
	title, header, selected, flag, dim lipgloss.Style
}

// New returns a model; feed it snapshots with SnapshotMsg or let Init
// start the refresh loop from Options.Source.
func New(opts Options) Model {
	if opts.Interval <= 0 {
		opts.Interval = 3 * time.Second
	}
	if opts.DetailLines <= 0 {
		opts.DetailLines = 6
	}
	r := opts.Renderer
	if r == nil {
		r = lipgloss.NewRenderer(nil)
	}
	return Model{
		opts: opts, width: 80, height: 24,
		styles: styles{
			title:    r.NewStyle().Bold(true).Reverse(true),
			header:   r.NewStyle().Bold(true),
			selected: r.NewStyle().Reverse(true),
			flag:     r.NewStyle().Foreground(lipgloss.Color("9")).Bold(true),
			dim:      r.NewStyle().Faint(true),
		},
	}
}

// Init starts the first refresh.
func (m Model) Init() tea.Cmd { return m.fetch() }

func (m Model) fetch() tea.Cmd {
	if m.opts.Source == nil {
		return nil
	}
	src := m.opts.Source
	interval := m.opts.Interval
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 4*interval)
		defer cancel()
		return SnapshotMsg(src(ctx))
	}
}

// Update handles keys, window sizes, snapshots and refresh ticks.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case SnapshotMsg:
		m.snap, m.loaded = Snapshot(msg), true
		m.apply()
		if m.opts.Source != nil {
			return m, tea.Tick(m.opts.Interval, func(time.Time) tea.Msg { return tickMsg{} })
		}
	case tickMsg:
		return m, m.fetch()
	case tea.KeyMsg:
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
			return m.typeAhead(msg.Runes)
		}
		if m.editing {
			return m.editFilter(msg), nil
		}
		return m.handleKey(msg)
	}
	return m, nil
}

// typeAhead handles keys typed faster than they were read, which arrive
// as one message: "/" then the filter text is a filter, not a key "/abc".
func (m Model) typeAhead(runes []rune) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	var model tea.Model = m
	for _, r := range runes {
		var cmd tea.Cmd
		model, cmd = model.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
		cmds = append(cmds, cmd)
	}
	return model, tea.Batch(cmds...)
}

func (m Model) handleKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch msg.String() {
	case "q", "ctrl+c":
		return m, tea.Quit
	case "esc":
		if m.detail {
			m.detail = false
		} else if m.filter != "" {
			m.filter = ""
			m.apply()
		}
	case "s":
		m.sortKey = (m.sortKey + 1) % sortKeys
		m.apply()
	case "/":
		m.editing = true
	case "enter":
		m.detail = !m.detail && len(m.rows) > 0
	case "up", "k":
		m.cursor = max(0, m.cursor-1)
	case "down", "j":
		m.cursor = min(len(m.rows)-1, m.cursor+1)
	case "r":
		return m, m.fetch()
	}
	return m, nil
}

// editFilter handles keys while the filter is being typed.
func (m Model) editFilter(msg tea.KeyMsg) Model {
	switch msg.Type {
	case tea.KeyEnter:
		m.editing = false
	case tea.KeyEsc:
		m.editing, m.filter = false, ""
	case tea.KeyBackspace:
		if r := []rune(m.filter); len(r) > 0 {
			m.filter = string(r[:len(r)-1])
		}
	case tea.KeyRunes, tea.KeySpace:
		m.filter += string(msg.Runes)
	}
	m.apply()
	return m
}

// apply recomputes the visible rows, keeping the selected job selected.
func (m *Model) apply() {
	selected := ""
	if m.cursor < len(m.rows) {
		selected = m.rows[m.cursor].JobID
	}
	rows := append([]Row(nil), Filter(m.snap.Rows, m.filter)...)
	Sort(rows, m.sortKey)
	m.rows, m.cursor = rows, 0
	for i, r := range rows {
		if r.JobID == selected {
			m.cursor = i
		}
	}
	if len(rows) == 0 {
		m.detail = false
	}
}

// View renders the screen at the current size.
func (m Model) View() string {
	width := max(m.width, 20)
	cols := visibleColumns(width)
	var lines []string
	lines = append(lines, m.styles.title.Render(pad(fit(m.titleLine(), width), width)))
	lines = append(lines, m.styles.header.Render(fit(formatRow(cols, headerCells(cols)), width)))

	var pane []string
	if m.detail && m.cursor < len(m.rows) {
		pane = m.detailPane(m.rows[m.cursor], width)
	}
	room := m.height - len(lines) - len(pane) - 1
	switch {
	case !m.loaded:
		lines = append(lines, m.styles.dim.Render("loading…"))
	case m.snap.Err != nil && len(m.rows) == 0:
		lines = append(lines, fit("cannot list jobs: "+m.snap.Err.Error(), width))
	case len(m.rows) == 0 && m.filter != "":
		lines = append(lines, "no job matches the filter")
	case len(m.rows) == 0:
		lines = append(lines, "no running jobs")
	}
	first := 0
	if m.cursor >= room && room > 0 {
		first = m.cursor - room + 1
	}
	for i := first; i < len(m.rows) && i-first < room; i++ {
		line := fit(formatRow(cols, rowCells(cols, m.rows[i])), width)
		if i == m.cursor {
			line = m.styles.selected.Render(pad(line, width))
		} else if len(m.rows[i].Flags()) > 0 {
			line = m.styles.flag.Render(line)
		}
		lines = append(lines, line)
	}
	for len(lines) < m.height-len(pane)-1 {
		lines = append(lines, "")
	}
	lines = append(lines, pane...)
	lines = append(lines, m.styles.dim.Render(fit(m.footer(), width)))
	return strings.Join(lines, "\n")
}

func (m Model) titleLine() string {
	parts := []string{"top", fmt.Sprintf("%d jobs", len(m.rows))}
	if m.opts.Scope != "" {
		parts[1] += " (" + m.opts.Scope + ")"
	}
	parts = append(parts, "sort: "+m.sortKey.String())
	if m.filter != "" {
		parts = append(parts, "filter: "+m.filter)
	}
	if !m.snap.Time.IsZero() {
		parts = append(parts, m.snap.Time.Format("15:04:05"))
	}
	return " " + strings.Join(parts, " · ")
}

func (m Model) footer() string {
	if m.editing {
		return "filter: " + m.filter + "▏  (enter apply, esc clear)"
	}
	if m.snap.Err != nil && len(m.rows) > 0 {
		return "refresh failed: " + m.snap.Err.Error()
	}
	return "q quit  s sort  / filter  enter details  ↑↓ move  r refresh"
}

// detailPane shows the selected job's progress lines and error.
func (m Model) detailPane(r Row, width int) []string {
	out := []string{m.styles.header.Render(fit(fmt.Sprintf("── %s %s · %s · %d GPUs · %s", r.JobID, r.Name, r.Nodes, r.GPUs, r.Log), width))}
	p := r.Progress
	switch {
	case r.LogError != "":
		out = append(out, fit("log: "+r.LogError, width))
	case p == nil || p.LastProgressLine == "":
		out = append(out, "no training progress line in the log yet")
	default:
		info := "step time " + formatStepTime(p.StepTimeS)
		if p.Source != "" {
			info += " (" + p.Source + ")"
		}
		if p.SpeedRatio != nil {
			info += fmt.Sprintf(" · speed %.0f%% of earlier", 100**p.SpeedRatio)
		}
		if p.Loss != nil {
			info += fmt.Sprintf(" · loss %.4g", *p.Loss)
		}
		out = append(out, fit(info, width))
		lines := p.ProgressLines
		if len(lines) == 0 {
			lines = []string{p.LastProgressLine}
		}
		if len(lines) > m.opts.DetailLines {
			lines = lines[len(lines)-m.opts.DetailLines:]
		}
		for _, l := range lines {
			out = append(out, fit("  "+l, width))
		}
	}
	if p != nil && p.ErrorLine != "" {
		out = append(out, m.styles.flag.Render(fit("error: "+p.ErrorLine, width)))
	}
	return out
}

// fit cuts s to width cells.
func fit(s string, width int) string { return ansi.Truncate(s, width, "…") }

// pad fills s with spaces to width cells.
func pad(s string, width int) string {
	if w := ansi.StringWidth(s); w < width {
		return s + strings.Repeat(" ", width-w)
	}
	return s
}
