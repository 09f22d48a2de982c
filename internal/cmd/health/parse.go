package health

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/nccltest"
)

// maxParseInput bounds how much of a file `health parse` reads.
const maxParseInput = 256 << 20

func newParseCmd(f *factory.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "parse FILE",
		Short: "Parse a saved nccl-tests output (\"-\" reads stdin)",
		Long: `Parses one nccl-tests output as printed, with launcher prefixes, NCCL_DEBUG
noise, markdown fences or shell prompts around it, and prints what it
shows. With --json it prints one object with collective, ranks (null when
the text does not say), avg_busbw_gbps (null without the footer),
max_busbw_gbps (largest out-of-place bus bandwidth), wrong (total of the
#wrong columns), outcome (ok, failed or truncated), rows, failures and
warnings.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runParse(f, args[0])
		},
	}
}

func runParse(f *factory.Factory, path string) error {
	var r io.Reader = f.IO.In
	if path != "-" {
		file, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return exitcode.New(exitcode.NotFound, err)
		}
		if err != nil {
			return exitcode.New(exitcode.DataErr, err)
		}
		defer file.Close()
		if fi, err := file.Stat(); err == nil && fi.IsDir() {
			return exitcode.Errorf(exitcode.DataErr, "%s is a directory", path)
		}
		r = file
	}
	res, err := nccltest.Parse(io.LimitReader(r, maxParseInput))
	if err != nil {
		return exitcode.New(exitcode.DataErr, fmt.Errorf("parse %s: %w", path, err))
	}
	out := f.IO.Out
	if f.JSON {
		return writeJSON(out, res)
	}
	ranks := "unknown"
	if res.Ranks > 0 {
		ranks = fmt.Sprint(res.Ranks)
	}
	fmt.Fprintf(out, "collective  %s\nranks       %s\ngpu         %s\noutcome     %s\n", orDash(res.Collective), ranks, orDash(res.GPUModel), res.Outcome)
	if res.AvgBusBW != nil {
		fmt.Fprintf(out, "avg busbw   %.2f GB/s (footer, all sizes)\n", *res.AvgBusBW)
	}
	bw, from := nccltest.LargeMessageBusBW(res.Rows, 0, nccltest.StatMax)
	fmt.Fprintf(out, "max busbw   %.2f GB/s out-of-place; %.2f GB/s on messages >= %d B\n", res.MaxBusBW(), bw, from)
	fmt.Fprintf(out, "rows        %d\nwrong       %g\n", len(res.Rows), res.Wrong)
	for _, e := range res.Failures {
		fmt.Fprintf(out, "failure     %s: %s\n", e.Kind, e.Text)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
