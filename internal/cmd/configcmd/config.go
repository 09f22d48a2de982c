// Package configcmd implements `schedmate config show|verify|path`.
package configcmd

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/factory"
)

// NewCmd returns the config command group.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show, check and locate schedmate's configuration",
		Long: `Configuration comes, highest precedence first, from command-line flags,
SCHEDMATE_* environment variables (SCHEDMATE_STORE_PATH sets store.path),
the files /etc/schedmate/config.yaml then $XDG_CONFIG_HOME/schedmate/config.yaml
(or the one file given with --config), and built-in defaults.`,
	}
	cmd.AddCommand(newShowCmd(f), newVerifyCmd(f), newPathCmd(f))
	return cmd
}

func newShowCmd(f *factory.Factory) *cobra.Command {
	var origins bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration",
		Args:  cobra.NoArgs,
		Example: `  schedmate config show
  schedmate config show --origins
  schedmate --json config show`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := f.Loaded()
			if err != nil {
				return err
			}
			if f.JSON {
				values, err := keyedValues(l.Config)
				if err != nil {
					return err
				}
				out := map[string]any{"config": values, "files": l.Files}
				if origins {
					out["origins"] = l.Origins
				}
				enc := json.NewEncoder(f.IO.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			if origins {
				keys := config.Keys()
				sort.Strings(keys)
				for _, k := range keys {
					fmt.Fprintf(f.IO.Out, "%-34s %s\n", k, l.Origins[k])
				}
				return nil
			}
			data, err := yaml.Marshal(l.Config)
			if err != nil {
				return fmt.Errorf("encode configuration: %w", err)
			}
			_, err = f.IO.Out.Write(data)
			return err
		},
	}
	cmd.Flags().BoolVar(&origins, "origins", false, "show where each value comes from instead of the values")
	return cmd
}

func newVerifyCmd(f *factory.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check the configuration files and environment; exit 2 on any problem",
		Args:  cobra.NoArgs,
		Example: `  schedmate config verify
  schedmate --config ./site.yaml config verify`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := f.Loaded()
			if err != nil {
				return err
			}
			if f.JSON {
				return json.NewEncoder(f.IO.Out).Encode(map[string]any{"ok": true, "files": l.Files})
			}
			if len(l.Files) == 0 {
				fmt.Fprintln(f.IO.Out, "configuration OK (no file found; defaults and environment only)")
				return nil
			}
			for _, p := range l.Files {
				fmt.Fprintf(f.IO.Out, "configuration OK: %s\n", p)
			}
			return nil
		},
	}
}

func newPathCmd(f *factory.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "path",
		Short: "Print where configuration and the database are looked for",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			files := []string{config.SystemFile, config.UserFile(f.Environ)}
			if f.ConfigFile != "" {
				files = []string{f.ConfigFile}
			}
			db, err := f.StorePath()
			if err != nil {
				return err
			}
			if f.JSON {
				return json.NewEncoder(f.IO.Out).Encode(map[string]any{"config_files": files, "database": db})
			}
			for _, p := range files {
				fmt.Fprintf(f.IO.Out, "config:   %s\n", p)
			}
			fmt.Fprintf(f.IO.Out, "database: %s\n", db)
			return nil
		},
	}
}

// keyedValues returns the configuration under its documented snake_case
// keys (as in the YAML file), with durations written as in the file ("2s").
func keyedValues(c *config.Config) (map[string]any, error) {
	data, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode configuration: %w", err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("encode configuration: %w", err)
	}
	return values, nil
}
