package metaagent

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// tools are the functions the agent may call.
var tools = []openai.Tool{
	{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name:        "file_tree",
		Description: "List the code and configuration files in the job's working directory (data, logs, checkpoints and caches are left out).",
		Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
	}},
	{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name:        "file_read",
		Description: "Read one code or configuration file, by its path relative to the working directory.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"relative path"}},"required":["path"],"additionalProperties":false}`),
	}},
}

// callTool runs one tool call and returns what the model is told. Files
// that were read are added to seen, for checking quoted evidence later.
func callTool(ws *Workspace, tc openai.ToolCall, seen map[string]string) string {
	switch tc.Function.Name {
	case "file_tree":
		tree, err := ws.Tree()
		if err != nil {
			return "error: " + err.Error()
		}
		return tree
	case "file_read":
		var args struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
			return fmt.Sprintf("error: arguments must be JSON like {\"path\": \"train.py\"}: %v", err)
		}
		text, truncated, err := ws.Read(args.Path)
		if err != nil {
			return "error: " + err.Error()
		}
		seen[sourceName(args.Path)] = text
		if truncated {
			text += fmt.Sprintf("\n[file cut at %d bytes]", ws.maxRead)
		}
		return text
	}
	return fmt.Sprintf("error: unknown tool %q; use file_tree or file_read", tc.Function.Name)
}

// sourceName is the key a read file is remembered under: a clean relative
// slash path, or "command" for the command line and batch script.
func sourceName(p string) string {
	p = strings.TrimSpace(p)
	if p == "command" {
		return p
	}
	return path.Clean(strings.ReplaceAll(p, "\\", "/"))
}
