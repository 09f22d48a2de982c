package fingerprint

import (
	"path/filepath"
	"strings"

	"github.com/schedmate/schedmate/internal/lazyre"
)

// batchScript is what parseScript finds in a batch script.
type batchScript struct {
	options map[string]string // #SBATCH options by long name
	launch  []string          // tokens of the launch command
}

// shortOptions maps sbatch's one-letter options to their long names.
var shortOptions = map[string]string{
	"J": "job-name", "p": "partition", "t": "time", "N": "nodes", "n": "ntasks",
	"c": "cpus-per-task", "G": "gpus", "o": "output", "e": "error", "A": "account",
	"q": "qos", "D": "chdir", "w": "nodelist", "x": "exclude", "C": "constraint",
	"a": "array", "d": "dependency", "m": "distribution", "M": "clusters", "L": "licenses",
}

// maxScriptLines bounds the lines of a script examined.
const maxScriptLines = 5000

// parseScript reads #SBATCH directives (up to the first command, as sbatch
// does) and picks the launch command: the last line that runs a known
// launcher, else the last srun line, else the last command.
func parseScript(body string) batchScript {
	s := batchScript{options: map[string]string{}}
	vars := map[string]string{}
	inHeader := true
	var best, srunLine, last []string
	for i, line := range logicalLines(body) {
		if i >= maxScriptLines {
			break
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			if rest, ok := strings.CutPrefix(trimmed, "#SBATCH"); ok && inHeader {
				parseDirective(rest, s.options)
			}
			continue
		}
		inHeader = false
		for _, cmd := range splitCommands(trimmed) {
			toks := expand(tokenize(cmd), vars)
			if len(toks) == 0 {
				continue
			}
			if name, val, ok := assignment(toks); ok {
				vars[name] = val
				continue
			}
			if toks[0] == "export" && len(toks) > 1 {
				if name, val, ok := assignment(toks[1:]); ok {
					vars[name] = val
				}
				continue
			}
			switch {
			case runsLauncher(toks):
				best = toks
			case toks[0] == "srun":
				srunLine = toks
			case !isShellBuiltin(toks[0]):
				last = toks
			}
		}
	}
	switch {
	case best != nil:
		s.launch = best
	case srunLine != nil:
		s.launch = srunLine
	default:
		s.launch = last
	}
	return s
}

// logicalLines splits text into lines, joining backslash continuations.
func logicalLines(body string) []string {
	raw := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	var out []string
	var cur strings.Builder
	for _, l := range raw {
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// parseDirective records one #SBATCH line's options.
func parseDirective(rest string, opts map[string]string) {
	toks := tokenize(rest)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case strings.HasPrefix(t, "--"):
			name, val, hasVal := strings.Cut(t[2:], "=")
			if !hasVal && i+1 < len(toks) && !strings.HasPrefix(toks[i+1], "-") {
				val = toks[i+1]
				i++
			}
			opts[name] = val
		case strings.HasPrefix(t, "-") && len(t) >= 2:
			long, ok := shortOptions[t[1:2]]
			if !ok {
				continue
			}
			val := t[2:]
			if val == "" && i+1 < len(toks) {
				val = toks[i+1]
				i++
			}
			opts[long] = strings.TrimPrefix(val, "=")
		}
	}
}

// splitCommands splits a line at unquoted ;, && and || (pipes and redirects
// end a command in tokenize).
func splitCommands(line string) []string {
	var out []string
	var cur strings.Builder
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ';':
			out = append(out, cur.String())
			cur.Reset()
			continue
		case (c == '&' || c == '|') && i+1 < len(line) && line[i+1] == c:
			out = append(out, cur.String())
			cur.Reset()
			i++
			continue
		}
		cur.WriteByte(c)
	}
	return append(out, cur.String())
}

// tokenize splits a command into words with shell quoting, stopping at an
// unquoted comment, pipe, background '&' or redirection.
func tokenize(s string) []string {
	var toks []string
	var cur strings.Builder
	inTok := false
	quote := byte(0)
	flush := func() {
		if inTok {
			toks = append(toks, cur.String())
			cur.Reset()
			inTok = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteByte(c)
			}
			continue
		}
		switch {
		case c == '\'' || c == '"':
			quote = c
			inTok = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inTok = true
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inTok, c == '|', c == '>', c == '<', c == '&':
			flush()
			return toks
		default:
			cur.WriteByte(c)
			inTok = true
		}
	}
	flush()
	return toks
}

var varRef = lazyre.New(`\$\{([A-Za-z_][A-Za-z0-9_]*|[0-9])\}|\$([A-Za-z_][A-Za-z0-9_]*|[0-9])`)

// expand substitutes variables assigned earlier in the script; unknown ones
// are left as written.
func expand(toks []string, vars map[string]string) []string {
	for i, t := range toks {
		if !strings.Contains(t, "$") {
			continue
		}
		toks[i] = varRef().ReplaceAllStringFunc(t, func(m string) string {
			name := strings.Trim(m, "${}")
			if v, ok := vars[name]; ok {
				return v
			}
			return m
		})
	}
	return toks
}

var assignRe = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*=`)

// assignment recognises a lone NAME=value command.
func assignment(toks []string) (name, val string, ok bool) {
	if len(toks) != 1 || !assignRe().MatchString(toks[0]) {
		return "", "", false
	}
	name, val, _ = strings.Cut(toks[0], "=")
	return name, val, true
}

// launchers are programs that start a training entry point.
var launchers = map[string]bool{
	"python": true, "python3": true, "torchrun": true, "deepspeed": true,
	"accelerate": true, "torch.distributed.run": true,
}

// runsLauncher reports whether a command runs a known launcher.
func runsLauncher(toks []string) bool {
	for _, t := range toks {
		base := filepath.Base(t)
		if launchers[base] || strings.HasPrefix(base, "python3.") {
			return true
		}
	}
	return false
}

// isShellBuiltin reports commands that are not the job's payload.
func isShellBuiltin(cmd string) bool {
	switch cmd {
	case "echo", "cd", "module", "source", ".", "set", "export", "ulimit", "mkdir", "cp", "mv", "rm",
		"conda", "mamba", "date", "hostname", "nvidia-smi", "sleep", "wait", "trap", "if", "then", "fi",
		"else", "for", "do", "done", "while", "unset", "pwd", "ls", "cat", "exit", "printf", "[", "[[", "test":
		return true
	}
	return false
}
