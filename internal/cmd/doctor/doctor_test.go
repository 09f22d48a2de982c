package doctor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/llm/llmtest"
)

func capable(req *openai.ChatCompletionRequest) llmtest.Reply {
	switch {
	case req.ResponseFormat != nil:
		return llmtest.Reply{Content: `{"sum":5}`}
	case len(req.Tools) > 0:
		return llmtest.Reply{ToolCalls: []openai.ToolCall{{Function: openai.FunctionCall{Name: "lookup_job", Arguments: `{"job_id":42}`}}}}
	}
	return llmtest.Reply{Content: "OK"}
}

// run executes `doctor <args>` with a clean environment.
func run(t *testing.T, jsonOut bool, args ...string) (string, string, error) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := factory.New(ios)
	f.Environ = []string{"XDG_CONFIG_HOME=" + t.TempDir(), "HOME=" + t.TempDir()}
	f.JSON = jsonOut
	defer f.Close()
	cmd := NewCmd(f)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true // as under the root command
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestDoctorLLM(t *testing.T) {
	srv := llmtest.New(t)
	srv.Respond(capable)
	stdout, stderr, err := run(t, false, "llm", "--base-url", srv.URL, "--model", llmtest.Model, "--embedding-model", llmtest.EmbeddingModel)
	if err != nil {
		t.Fatalf("doctor llm: %v\n%s", err, stderr)
	}
	for _, want := range []string{"ok    models", "ok    structured-output", "ok    tool-calls", "ok    embeddings", "tokens used:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "llm.enabled is false") {
		t.Errorf("stderr = %q", stderr)
	}
}

func TestDoctorLLMJSON(t *testing.T) {
	srv := llmtest.New(t)
	srv.Respond(func(req *openai.ChatCompletionRequest) llmtest.Reply {
		if len(req.Tools) > 0 {
			return llmtest.Reply{Content: "I cannot call tools."}
		}
		return capable(req)
	})
	stdout, _, err := run(t, true, "llm", "--base-url", srv.URL, "--model", llmtest.Model)
	if exitcode.Of(err) != exitcode.CheckFailed {
		t.Fatalf("err = %v, want check-failed", err)
	}
	var got struct {
		OK     bool `json:"ok"`
		Checks []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	status := map[string]string{}
	for _, c := range got.Checks {
		status[c.Name] = c.Status
	}
	if got.OK || status["tool-calls"] != "fail" || status["chat"] != "ok" || status["embeddings"] != "skip" {
		t.Errorf("report %+v", got)
	}
}

func TestDoctorLLMExitCodes(t *testing.T) {
	srv := llmtest.New(t)
	tests := []struct {
		name string
		args []string
		want exitcode.Code
	}{
		{"unreachable", []string{"llm", "--base-url", "http://127.0.0.1:1/v1"}, exitcode.Unavailable},
		{"bad url", []string{"llm", "--base-url", "ftp://x"}, exitcode.Usage},
		{"model not served", []string{"llm", "--base-url", srv.URL, "--model", "nope"}, exitcode.CheckFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := run(t, false, tt.args...)
			if exitcode.Of(err) != tt.want {
				t.Errorf("exit %d (%v), want %d", exitcode.Of(err), err, tt.want)
			}
		})
	}
}
