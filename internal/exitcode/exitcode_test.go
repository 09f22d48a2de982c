package exitcode

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, OK},
		{"plain", errors.New("x"), Error},
		{"coded", New(NotFound, errors.New("x")), NotFound},
		{"wrapped coded", fmt.Errorf("ctx: %w", Errorf(Locked, "db busy")), Locked},
	}
	for _, tt := range tests {
		if got := Of(tt.err); got != tt.want {
			t.Errorf("%s: Of = %d, want %d", tt.name, got, tt.want)
		}
	}
	if New(Usage, nil) != nil {
		t.Error("New(code, nil) must be nil")
	}
}

func TestDescribeListsEveryCode(t *testing.T) {
	out := Describe()
	for c := OK; c <= CheckFailed; c++ {
		if !strings.Contains(out, fmt.Sprintf("  %d  ", c)) {
			t.Errorf("code %d missing from Describe()", c)
		}
	}
}

func TestSilent(t *testing.T) {
	err := Silent(Code(42))
	if Of(err) != 42 || !IsSilent(err) {
		t.Errorf("Silent(42): code %d, silent %v", Of(err), IsSilent(err))
	}
	if IsSilent(New(Error, errors.New("boom"))) {
		t.Error("an ordinary error reads as silent")
	}
}
