package root

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
)

// run executes one command line with a private environment and returns its
// exit code, stdout and stderr.
func run(t *testing.T, environ []string, args ...string) (int, string, string) {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	f := factory.New(io)
	f.Environ = environ
	code := Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "db", "schedmate.db")
	badConfig := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badConfig, []byte("store:\n  lock_timout: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "SCHEDMATE_STORE_PATH=" + db}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string
		wantErr    []string
		wantNoFile bool
	}{
		{name: "help opens nothing", args: []string{"--help"}, wantOut: []string{"Plan jobs:", "Run by Slurm:", "Examples:"}, wantNoFile: true},
		{name: "version", args: []string{"version"}, wantOut: []string{"schedmate "}, wantNoFile: true},
		{name: "version json", args: []string{"--json", "version"}, wantOut: []string{`"version"`, `"go_version"`}},
		{name: "exit codes topic", args: []string{"help", "exit-codes"}, wantOut: []string{"5  locked", "8  check-failed"}},
		{name: "completion", args: []string{"completion", "bash"}, wantOut: []string{"schedmate"}, wantNoFile: true},
		{name: "unknown command", args: []string{"nosuch"}, wantCode: 2, wantErr: []string{"unknown command"}},
		{name: "bad flag", args: []string{"version", "--nosuch"}, wantCode: 2, wantErr: []string{"unknown flag"}},
		{name: "config verify names file, line and key", args: []string{"--config", badConfig, "config", "verify"}, wantCode: 2, wantErr: []string{"bad.yaml:2", "store.lock_timout", "unknown key"}},
		{name: "config path", args: []string{"config", "path"}, wantOut: []string{"database: " + db}},
		{name: "config show origins", args: []string{"config", "show", "--origins"}, wantOut: []string{"store.path", "env SCHEDMATE_STORE_PATH"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, environ, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if tt.wantNoFile {
				if _, err := os.Stat(db); !os.IsNotExist(err) {
					t.Errorf("%v created or touched the database: %v", tt.args, err)
				}
			}
		})
	}
}

func TestConfigShowJSONUsesDocumentedKeys(t *testing.T) {
	code, out, errOut := run(t, []string{"HOME=" + t.TempDir()}, "--json", "config", "show")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v struct {
		Config struct {
			Advisor map[string]any `json:"advisor"`
			Hooks   map[string]any `json:"hooks"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if got := v.Config.Advisor["top_k"]; got != float64(3) {
		t.Errorf("advisor.top_k = %v, want 3", got)
	}
	if got := v.Config.Hooks["submit_deadline"]; got != "1s" {
		t.Errorf("hooks.submit_deadline = %v, want \"1s\"", got)
	}
}
