package fingerprint

import (
	"path/filepath"
	"strings"
)

// launch is the parsed launch command.
type launch struct {
	launcher  string
	entry     string
	args      []string
	command   string
	configs   []string
	framework string
}

// wrapperValueOptions are options of wrappers (srun, mpirun, launchers) that
// take a separate value; others are taken as flags.
var wrapperValueOptions = map[string]bool{
	"-n": true, "-N": true, "-c": true, "-G": true, "-t": true, "-p": true, "-J": true, "-o": true,
	"-e": true, "-w": true, "-x": true, "-A": true, "-np": true, "-H": true, "--hostfile": true,
	"--ntasks": true, "--nodes": true, "--gpus": true, "--cpus-per-task": true, "--gres": true,
	"--ntasks-per-node": true, "--gpus-per-node": true, "--mpi": true, "--cpu-bind": true,
	"--container-image": true, "--container-mounts": true, "--export": true, "--output": true,
	"--error": true, "--nproc_per_node": true, "--nproc-per-node": true, "--nnodes": true,
	"--node_rank": true, "--node-rank": true, "--rdzv_endpoint": true, "--rdzv-endpoint": true,
	"--rdzv_backend": true, "--rdzv-backend": true, "--rdzv_id": true, "--rdzv-id": true,
	"--master_addr": true, "--master-addr": true, "--master_port": true, "--master-port": true,
	"--num_gpus": true, "--num_nodes": true, "--include": true, "--exclude": true,
	"--num_processes": true, "--num_machines": true, "--machine_rank": true,
	"--main_process_ip": true, "--main_process_port": true, "--mixed_precision": true,
	"--config_file": true, "--deepspeed_config_file": true, "-B": true, "--bind": true,
	"--max_restarts": true, "--max-restarts": true, "--log_dir": true, "--log-dir": true,
	"--launcher": true, "--hostfile_path": true, "--dynamo_backend": true,
}

// wrappers run another command after their own options.
var wrappers = map[string]bool{
	"srun": true, "mpirun": true, "mpiexec": true, "ibrun": true, "exec": true, "time": true,
	"nohup": true, "env": true, "numactl": true, "stdbuf": true,
}

// containerRunners take a subcommand and an image before the command.
var containerRunners = map[string]bool{"apptainer": true, "singularity": true}

// parseLaunch finds the launcher, entry point and its arguments in a
// command, replacing $1..$9 with the script's own arguments.
func parseLaunch(toks []string, scriptArgs []string) launch {
	var l launch
	if len(toks) == 0 {
		return l
	}
	vars := map[string]string{}
	for i, a := range scriptArgs {
		if i < 9 {
			vars[string(rune('1'+i))] = a
		}
	}
	toks = expand(append([]string(nil), toks...), vars)
	i := skipWrappers(toks, 0, &l)
	if i >= len(toks) {
		return l
	}
	if strings.HasPrefix(toks[i], "-") {
		return l // an option where a program should be: not a command line schedmate understands
	}
	prog := filepath.Base(toks[i])
	rest := toks[i+1:]
	switch {
	case prog == "torchrun":
		l.launcher, l.framework = "torchrun", "pytorch"
		l.entry, l.args = entryAfterOptions(rest, &l)
	case prog == "deepspeed":
		l.launcher, l.framework = "deepspeed", "deepspeed"
		l.entry, l.args = entryAfterOptions(rest, &l)
	case prog == "accelerate":
		l.launcher, l.framework = "accelerate", "pytorch"
		if len(rest) > 0 && rest[0] == "launch" {
			rest = rest[1:]
		}
		l.entry, l.args = entryAfterOptions(rest, &l)
	case strings.HasPrefix(prog, "python"):
		l.launcher = "python"
		l.entry, l.args = pythonEntry(rest, &l)
	case prog == "bash" || prog == "sh":
		l.launcher = prog
		l.entry, l.args = entryAfterOptions(rest, &l)
	default:
		if l.launcher == "" {
			l.launcher = "exec"
		}
		l.entry, l.args = toks[i], rest
	}
	l.configs = append(l.configs, configRefs(l.args)...)
	l.command = strings.Join(append([]string{l.launcher, l.entry}, l.args...), " ")
	if len(l.command) > 4096 {
		l.command = l.command[:4096]
	}
	return l
}

// skipWrappers steps over environment assignments, srun/mpirun and
// container runners with their options, noting srun as the launcher.
func skipWrappers(toks []string, i int, l *launch) int {
	for i < len(toks) {
		t := toks[i]
		base := filepath.Base(t)
		switch {
		case assignRe().MatchString(t):
			i++
		case wrappers[base]:
			if base == "srun" || base == "mpirun" || base == "mpiexec" {
				l.launcher = base
			}
			i = skipOptions(toks, i+1)
		case containerRunners[base]:
			i = skipOptions(toks, i+2) // subcommand (exec/run), options
			i++                        // image
		default:
			return i
		}
	}
	return i
}

// skipOptions steps over dash options from i, with their values when the
// option is known to take one.
func skipOptions(toks []string, i int) int {
	for i < len(toks) && strings.HasPrefix(toks[i], "-") {
		if wrapperValueOptions[toks[i]] && i+1 < len(toks) {
			i++
		}
		i++
	}
	return i
}

// entryAfterOptions returns the first non-option token (the entry script or
// -m module) and what follows. Config files named in launcher options are
// recorded.
func entryAfterOptions(toks []string, l *launch) (string, []string) {
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t == "-m" || t == "--module" {
			if i+1 < len(toks) {
				return toks[i+1], toks[i+2:]
			}
			return "", nil
		}
		if !strings.HasPrefix(t, "-") {
			return t, toks[i+1:]
		}
		name, val, hasVal := strings.Cut(t, "=")
		if !hasVal && wrapperValueOptions[name] && i+1 < len(toks) {
			val = toks[i+1]
			i++
		}
		if isConfigOption(name) && val != "" {
			l.configs = append(l.configs, val)
		}
	}
	return "", nil
}

// pythonEntry handles python's own options: -m module (including
// torch.distributed.run, which is torchrun), -c code, or a script.
func pythonEntry(toks []string, l *launch) (string, []string) {
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t == "-m" && i+1 < len(toks):
			mod := toks[i+1]
			switch mod {
			case "torch.distributed.run", "torch.distributed.launch":
				l.launcher, l.framework = "torchrun", "pytorch"
				return entryAfterOptions(toks[i+2:], l)
			case "deepspeed.launcher.runner":
				l.launcher, l.framework = "deepspeed", "deepspeed"
				return entryAfterOptions(toks[i+2:], l)
			case "accelerate.commands.launch":
				l.launcher, l.framework = "accelerate", "pytorch"
				return entryAfterOptions(toks[i+2:], l)
			}
			return mod, toks[i+2:]
		case t == "-c":
			return "-c", nil
		case t == "-W" || t == "-X":
			i++
		case strings.HasPrefix(t, "-"):
		default:
			return t, toks[i+1:]
		}
	}
	return "", nil
}

// isConfigOption reports options that name a config file.
func isConfigOption(name string) bool {
	switch normKey(name) {
	case "config", "cfg", "config_file", "config_path", "configfile", "deepspeed", "deepspeed_config",
		"deepspeed_config_file", "hparams", "hparams_file", "yaml", "conf", "c":
		return true
	}
	return false
}

// configRefs returns config files named in the entry's arguments: values of
// config options, Hydra's --config-path/--config-name, and any argument
// that is a .yaml, .yml, .json or .toml path.
func configRefs(args []string) []string {
	var out []string
	var hydraPath, hydraName string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		if strings.HasPrefix(name, "-") && !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			val, hasVal = args[i+1], true
		}
		switch normKey(name) {
		case "config_path", "cp":
			if hasVal && !isConfigFile(val) {
				hydraPath = val
				continue
			}
		case "config_name", "cn":
			if hasVal {
				hydraName = val
				continue
			}
		}
		if hasVal && isConfigFile(val) {
			out = append(out, val)
		} else if isConfigFile(a) {
			out = append(out, a)
		}
	}
	if hydraName != "" {
		if !isConfigFile(hydraName) {
			hydraName += ".yaml"
		}
		out = append(out, filepath.Join(hydraPath, hydraName))
	}
	return dedupe(out)
}

// isConfigFile reports config file names by extension.
func isConfigFile(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".yaml", ".yml", ".json", ".toml":
		return !strings.Contains(p, "://")
	}
	return false
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
