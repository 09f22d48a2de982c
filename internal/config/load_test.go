package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	system := writeFile(t, dir, "system.yaml", "store:\n  path: /sys.db\n  lock_timeout: 3s\nadvisor:\n  top_k: 5\n")
	user := writeFile(t, dir, "user.yaml", "store:\n  path: /user.db\n")
	l, err := Load(LoadOptions{
		SystemFile: system, UserFile: user,
		Environ: []string{"SCHEDMATE_ADVISOR_TOP_K=7", "SCHEDMATE_LOG_LEVEL=info"},
		Flags:   map[string]string{"log.level": "debug"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.Store.Path != "/user.db" || c.Store.LockTimeout != 3*time.Second {
		t.Errorf("files: got path %q timeout %v", c.Store.Path, c.Store.LockTimeout)
	}
	if c.Advisor.TopK != 7 {
		t.Errorf("env should beat file: top_k = %d", c.Advisor.TopK)
	}
	if c.Log.Level != "debug" {
		t.Errorf("flag should beat env: level = %q", c.Log.Level)
	}
	if c.Advisor.Threshold != 0.90 {
		t.Errorf("default threshold = %v", c.Advisor.Threshold)
	}
	wantOrigins := map[string]string{
		"store.path":        "file " + user,
		"advisor.top_k":     "env SCHEDMATE_ADVISOR_TOP_K",
		"log.level":         "flag --level",
		"advisor.threshold": "default",
	}
	for k, want := range wantOrigins {
		if got := l.Origins[k].String(); got != want {
			t.Errorf("origin of %s = %q, want %q", k, got, want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		environ []string
		want    []string
	}{
		{"unknown key", "store:\n  path: /x\n  lokc_timeout: 1s\n", nil, []string{"config.yaml:3", "store.lokc_timeout", "unknown key"}},
		{"bad duration", "hooks:\n  submit_deadline: soon\n", nil, []string{"hooks.submit_deadline", "not a duration", "config.yaml"}},
		{"bad range", "advisor:\n  threshold: 1.5\n", nil, []string{"advisor.threshold", "outside 0..1"}},
		{"bad env", "", []string{"SCHEDMATE_ADVISOR_TOP_K=many"}, []string{"env SCHEDMATE_ADVISOR_TOP_K", "advisor.top_k", "not a valid integer"}},
		{"invalid yaml", "store: [\n", nil, []string{"not valid YAML"}},
		{"future version", "version: 9\n", nil, []string{"version", "not supported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "config.yaml", tt.file)
			_, err := Load(LoadOptions{File: p, Environ: append([]string{"HOME=/nonexistent"}, tt.environ...)})
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadExplicitFileMustExist(t *testing.T) {
	_, err := Load(LoadOptions{File: filepath.Join(t.TempDir(), "missing.yaml")})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want not-exist", err)
	}
}

func TestLoadMissingDefaultFilesIsFine(t *testing.T) {
	dir := t.TempDir()
	l, err := Load(LoadOptions{SystemFile: filepath.Join(dir, "a"), UserFile: filepath.Join(dir, "b"), Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Files) != 0 || l.Config.Failure.RequeueMax != 2 {
		t.Fatalf("got files %v requeue_max %d", l.Files, l.Config.Failure.RequeueMax)
	}
}
