// Command gen-docs writes schedmate's man pages and shell completions. The
// output is reproducible (a fixed date), so a check can fail on drift.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/schedmate/schedmate/internal/cmd/root"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
)

// docDate is printed in every man page so regenerating changes nothing.
var docDate = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

func main() {
	manDir := flag.String("man", "man", "directory for man pages")
	complDir := flag.String("completions", "completions", "directory for shell completions")
	flag.Parse()
	if err := generate(*manDir, *complDir); err != nil {
		fmt.Fprintf(os.Stderr, "gen-docs: %v\n", err)
		os.Exit(1)
	}
}

func generate(manDir, complDir string) error {
	io, _, _, _ := iostreams.Test()
	cmd := root.NewCmd(factory.New(io))
	cmd.DisableAutoGenTag = true
	if err := os.MkdirAll(manDir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	header := &doc.GenManHeader{Title: "SCHEDMATE", Section: "1", Date: &docDate, Source: "schedmate", Manual: "schedmate manual"}
	if err := doc.GenManTree(cmd, header, manDir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	if err := os.MkdirAll(complDir, 0o755); err != nil {
		return err
	}
	shells := []struct {
		file string
		gen  func(*cobra.Command, *bytes.Buffer) error
	}{
		{"schedmate.bash", func(c *cobra.Command, b *bytes.Buffer) error { return c.GenBashCompletionV2(b, true) }},
		{"_schedmate", func(c *cobra.Command, b *bytes.Buffer) error { return c.GenZshCompletion(b) }},
		{"schedmate.fish", func(c *cobra.Command, b *bytes.Buffer) error { return c.GenFishCompletion(b, true) }},
	}
	for _, s := range shells {
		var b bytes.Buffer
		if err := s.gen(cmd, &b); err != nil {
			return fmt.Errorf("completion %s: %w", s.file, err)
		}
		if err := os.WriteFile(filepath.Join(complDir, s.file), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
