// Package version implements `schedmate version`.
package version

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/buildinfo"
	"github.com/schedmate/schedmate/internal/factory"
)

// Info is what `version --json` prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// NewCmd returns the version command.
func NewCmd(f *factory.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print schedmate's version",
		Args:  cobra.NoArgs,
		Example: `  schedmate version
  schedmate version --json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := Info{
				Version:   buildinfo.Version,
				Commit:    buildinfo.CommitOrVCS(),
				Date:      buildinfo.Date,
				GoVersion: runtime.Version(),
				Platform:  runtime.GOOS + "/" + runtime.GOARCH,
			}
			if f.JSON {
				enc := json.NewEncoder(f.IO.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			_, err := fmt.Fprintf(f.IO.Out, "schedmate %s (commit %s, %s, %s)\n", info.Version, info.Commit, info.GoVersion, info.Platform)
			return err
		},
	}
}
