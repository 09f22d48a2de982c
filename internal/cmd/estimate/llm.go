package estimate

import (
	"context"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/llmassist"
)

// enrichMetadata lets the metadata agent fill the workload fields static
// extraction left empty, when llm.enabled is set and --no-llm is not, and
// returns the notes to print. The submit hook never does this.
func enrichMetadata(ctx context.Context, f *factory.Factory, req *advisor.SubmitRequest, noLLM bool) []string {
	if noLLM {
		return nil
	}
	cfg, err := f.Config()
	if err != nil || !cfg.LLM.Enabled {
		return nil
	}
	client, err := f.LLM()
	return llmassist.EnrichSubmit(ctx, client, err, req).Notes()
}
