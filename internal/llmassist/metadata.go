package llmassist

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/fingerprint"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/metaagent"
)

// MetadataOutcome is an Outcome for workload metadata, with the fields the
// agent added and what the extraction cost.
type MetadataOutcome struct {
	Outcome
	// Filled maps each field the agent added to its value.
	Filled map[string]string
	// Usage is what the extraction cost; zero on a cache hit.
	Usage llm.Usage
	// Cached is true when the agent's answer came from the cache.
	Cached bool
}

// Notes renders the outcome as the lines an estimate prints.
func (o MetadataOutcome) Notes() []string {
	var notes []string
	if len(o.Filled) > 0 {
		keys := make([]string, 0, len(o.Filled))
		for k := range o.Filled {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + o.Filled[k]
		}
		cost := fmt.Sprintf("%d tokens", o.Usage.TotalTokens)
		if o.Cached {
			cost = "cached, 0 tokens"
		}
		notes = append(notes, fmt.Sprintf("metadata from llm (%s): %s", cost, strings.Join(parts, " ")))
	}
	if o.Note != "" {
		notes = append(notes, "metadata: "+o.Note)
	}
	return notes
}

// EnrichSubmit runs the metadata agent on the job's working directory and
// adds the fields that static extraction left empty to req.Job.Metadata, so
// retrieval uses them; static values always win. client may be nil with
// clientErr saying why: a disabled layer changes nothing and leaves no
// note. Any failure leaves req as it is, with a note.
func EnrichSubmit(ctx context.Context, client *llm.Client, clientErr error, req *advisor.SubmitRequest) MetadataOutcome {
	out := MetadataOutcome{Outcome: Outcome{Source: SourceDeterministic}}
	if client == nil {
		out.Note = unavailableNote(clientErr)
		return out
	}
	body := req.ScriptBody
	if body == nil {
		b, err := fingerprint.ReadScript(req.Script, req.Job.WorkDir, req.Access, fingerprint.Limits{})
		if err != nil {
			out.Note = "static metadata only: " + err.Error()
			return out
		}
		body = b
	}
	fp, err := fingerprint.Extract(fingerprint.Input{Script: req.Script, ScriptBody: body, Args: req.Args, WorkDir: req.Job.WorkDir, Access: req.Access})
	if err != nil {
		out.Note = "static metadata only: " + err.Error()
		return out
	}
	static := map[string]string{}
	maps.Copy(static, fp.Metadata)
	maps.Copy(static, req.Job.Metadata)
	agent := metaagent.Agent{LLM: client, Cache: client.Cache()}
	out.Asked = true
	res, err := agent.Extract(ctx, metaagent.Input{WorkDir: fp.WorkDir, Command: fp.Command, Script: string(body)}, StaticMetadata(static))
	if err != nil {
		out.Note = "static metadata only: " + err.Error()
		return out
	}
	out.Note, out.Usage, out.Cached = res.Note, res.Usage, res.Cached
	out.Filled = AgentFields(res, static)
	if len(out.Filled) == 0 {
		return out
	}
	out.Source = SourceLLM
	if req.Job.Metadata == nil {
		req.Job.Metadata = map[string]string{}
	}
	maps.Copy(req.Job.Metadata, out.Filled)
	return out
}

// StaticMetadata maps the fingerprint's workload fields onto the agent's
// form; a count that is not a plain number is left empty there, and
// AgentFields never lets the agent replace it.
func StaticMetadata(m map[string]string) metaagent.Metadata {
	count := func(k string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(m[k]), 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	return metaagent.Metadata{
		Model: m["model"], Dataset: m["dataset"], Framework: m["framework"],
		BatchSize: count("batch_size"), Epochs: count("epochs"), Steps: count("steps"), SeqLen: count("seq_len"),
	}
}

// AgentFields returns the fields the agent filled that static extraction
// left empty, as text.
func AgentFields(res metaagent.Result, static map[string]string) map[string]string {
	values := map[string]string{
		"model": res.Metadata.Model, "dataset": res.Metadata.Dataset, "framework": res.Metadata.Framework,
		"batch_size": number(res.Metadata.BatchSize), "epochs": number(res.Metadata.Epochs),
		"steps": number(res.Metadata.Steps), "seq_len": number(res.Metadata.SeqLen),
	}
	filled := map[string]string{}
	for _, f := range metaagent.Fields {
		if res.Sources[f] != "agent" || static[f] != "" || values[f] == "" {
			continue
		}
		filled[f] = values[f]
	}
	return filled
}

func number(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}
