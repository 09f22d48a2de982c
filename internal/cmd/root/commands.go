package root

import (
	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/cmd/diagnose"
	"github.com/schedmate/schedmate/internal/cmd/doctor"
	"github.com/schedmate/schedmate/internal/cmd/estimate"
	"github.com/schedmate/schedmate/internal/cmd/eval"
	"github.com/schedmate/schedmate/internal/cmd/health"
	"github.com/schedmate/schedmate/internal/cmd/history"
	"github.com/schedmate/schedmate/internal/cmd/hook"
	metricscmd "github.com/schedmate/schedmate/internal/cmd/metrics"
	"github.com/schedmate/schedmate/internal/cmd/sbatch"
	topcmd "github.com/schedmate/schedmate/internal/cmd/top"
	"github.com/schedmate/schedmate/internal/factory"
)

// addDomainCommands attaches the commands of schedmate's services.
func addDomainCommands(f *factory.Factory, add func(group string, cmds ...*cobra.Command)) {
	add(groupPlan, estimate.NewCmd(f), sbatch.NewCmd(f), eval.NewCmd(f))
	add(groupMonitor, topcmd.NewCmd(f), metricscmd.NewCmd(f))
	add(groupFailure, diagnose.NewCmd(f))
	add(groupHealth, health.NewCmd(f))
	add(groupHistory, history.NewCmd(f))
	add(groupHooks, hook.NewCmdWithSteps(f, hookSteps(f)))
	add(groupSetup, doctor.NewCmd(f))
}
