package iostreams

import "testing"

func TestColorOnlyOnATerminal(t *testing.T) {
	tests := []struct {
		name     string
		terminal bool
		noColor  bool
		want     bool
	}{
		{"pipe", false, false, false},
		{"terminal", true, false, true},
		{"terminal with --no-color or NO_COLOR", true, true, false},
	}
	for _, tt := range tests {
		s, _, _, _ := Test()
		s.SetTerminal(false, tt.terminal, tt.terminal)
		if tt.noColor {
			s.DisableColor()
		}
		if got := s.ColorEnabled(); got != tt.want {
			t.Errorf("%s: ColorEnabled = %v, want %v", tt.name, got, tt.want)
		}
		if got := s.Renderer().NewStyle().Bold(true).Render("x"); (got != "x") != tt.want {
			t.Errorf("%s: rendered %q", tt.name, got)
		}
	}
}

func TestTerminalWidthDefault(t *testing.T) {
	s, _, _, _ := Test()
	if w := s.TerminalWidth(); w != 80 {
		t.Errorf("TerminalWidth = %d, want 80 when unknown", w)
	}
}
