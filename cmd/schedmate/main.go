// Command schedmate makes Slurm GPU clusters aware of what their jobs are.
package main

import (
	"os"

	"github.com/schedmate/schedmate/internal/cmd/root"
)

func main() { os.Exit(root.Main()) }
