package fingerprint

import (
	"errors"
	"fmt"
	"strings"
)

// SbatchArgs is an sbatch command line split into its options, the script
// and the script's arguments.
type SbatchArgs struct {
	Options    map[string]string // by long name; flags map to ""
	Script     string
	ScriptArgs []string
}

// sbatchFlags are long options of sbatch that take no value.
var sbatchFlags = map[string]bool{
	"exclusive": true, "requeue": true, "no-requeue": true, "wait": true, "parsable": true,
	"test-only": true, "hold": true, "overcommit": true, "spread-job": true, "use-min-nodes": true,
	"contiguous": true, "quiet": true, "verbose": true, "no-kill": true, "help": true, "usage": true,
	"version": true, "ignore-pbs": true, "reboot": true, "oversubscribe": true, "get-user-env": true,
}

// shortFlags are one-letter sbatch options that take no value.
var shortFlags = map[byte]bool{'h': true, 'H': true, 'k': true, 'O': true, 'Q': true, 's': true, 'v': true, 'V': true, 'W': true}

// ErrNoScript reports an sbatch command line without a script.
var ErrNoScript = errors.New("no batch script given")

// ParseSbatchArgs splits sbatch's command line: options up to the first
// non-option argument (the script), then the script's own arguments.
// --wrap is refused since there is no script to read.
func ParseSbatchArgs(args []string) (SbatchArgs, error) {
	out := SbatchArgs{Options: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				out.Script, out.ScriptArgs = args[i+1], args[i+2:]
			}
			return finish(out)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			if !hasVal && !sbatchFlags[name] {
				if i+1 >= len(args) {
					return out, fmt.Errorf("option --%s needs a value", name)
				}
				i++
				val = args[i]
			}
			out.Options[name] = val
		case strings.HasPrefix(a, "-") && len(a) > 1:
			c := a[1]
			if shortFlags[c] {
				continue
			}
			long, ok := shortOptions[string(c)]
			if !ok {
				long = string(c)
			}
			val := a[2:]
			if val == "" {
				if i+1 >= len(args) {
					return out, fmt.Errorf("option -%c needs a value", c)
				}
				i++
				val = args[i]
			}
			out.Options[long] = strings.TrimPrefix(val, "=")
		default:
			out.Script, out.ScriptArgs = a, args[i+1:]
			return finish(out)
		}
	}
	return finish(out)
}

func finish(a SbatchArgs) (SbatchArgs, error) {
	if _, wrap := a.Options["wrap"]; wrap {
		return a, errors.New("--wrap has no script to estimate from")
	}
	if a.Script == "" {
		return a, ErrNoScript
	}
	return a, nil
}
