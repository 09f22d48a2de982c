package diagnose

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/golden"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
)

// unsureLog ends in a failure the signatures cannot name (category other).
const unsureLog = "step 1 | loss 2.1 | 400 ms/step\nstep 2 | loss 2.0 | 400 ms/step\nERROR: worker 3 exited unexpectedly\nsrun: error: n1: task 0: Exited with exit code 1\n"

// runWithLLM runs diagnose with the LLM layer pointed at srv (nil: disabled).
func runWithLLM(t *testing.T, srv *llmtest.Server, jsonOut bool, args ...string) string {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	f := factory.New(ios)
	f.JSON = jsonOut
	f.Environ = []string{"SCHEDMATE_STORE_PATH=" + filepath.Join(t.TempDir(), "s.db")}
	if srv != nil {
		f.Environ = append(f.Environ, "SCHEDMATE_LLM_ENABLED=true", "SCHEDMATE_LLM_BASE_URL="+srv.URL,
			"SCHEDMATE_LLM_MODEL="+llmtest.Model, "SCHEDMATE_LLM_TIMEOUT=300ms", "SCHEDMATE_LLM_MAX_RETRIES=0")
	}
	defer f.Close()
	cmd := NewCmd(f)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(out)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestDiagnoseLLMDisabledGolden(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.log")
	if err := os.WriteFile(path, []byte(unsureLog), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, jsonOut := range []bool{false, true} {
		got := strings.ReplaceAll(runWithLLM(t, nil, jsonOut, "--log", path), dir, "DIR")
		// --no-llm with the layer on prints the same bytes and asks nothing.
		noLLM := strings.ReplaceAll(runWithLLM(t, llmtest.New(t), jsonOut, "--no-llm", "--log", path), dir, "DIR")
		if noLLM != got {
			t.Errorf("--no-llm output differs:\n%s\nwant\n%s", noLLM, got)
		}
		path := filepath.Join("testdata", "llm_disabled.txt")
		if jsonOut {
			path = filepath.Join("testdata", "llm_disabled.json")
		}
		golden.Check(t, path, []byte(got))
	}
}

func TestDiagnoseLLM(t *testing.T) {
	path := writeLog(t, "job.log", unsureLog)
	tests := []struct {
		name     string
		reply    llmtest.Reply
		category string
		source   string
		noteHas  string
		humanHas string
	}{
		{"good answer", llmtest.Reply{Content: `{"category":"infrastructure","component":"node","root_line":3,"reason":"worker lost"}`},
			"infrastructure", "llm", "llm changed other to infrastructure/node", "answer:     llm (deterministic: other, line 3, confidence 0.35)"},
		{"down", llmtest.Reply{Status: 503}, "other", "deterministic", "deterministic answer stands: llm unavailable", "llm note:   deterministic answer stands"},
		{"garbage", llmtest.Reply{RawBody: "not json"}, "other", "deterministic", "deterministic answer stands", "answer:     deterministic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(tt.reply, tt.reply)
			var r map[string]any
			if err := json.Unmarshal([]byte(runWithLLM(t, srv, true, "--log", path)), &r); err != nil {
				t.Fatal(err)
			}
			det, _ := r["deterministic"].(map[string]any)
			if r["category"] != tt.category || r["answer_source"] != tt.source || !strings.Contains(r["llm_note"].(string), tt.noteHas) || det["category"] != "other" {
				t.Fatalf("report %v", r)
			}
			if human := runWithLLM(t, srv, false, "--log", path); !strings.Contains(human, tt.humanHas) {
				t.Fatalf("human output lacks %q:\n%s", tt.humanHas, human)
			}
		})
	}
}
