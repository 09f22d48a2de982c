package fingerprint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/schedmate/schedmate/internal/lazyre"
	"gopkg.in/yaml.v3"
)

// aliases maps normalised argument and config keys to metadata fields.
var aliases = map[string]string{}

func init() {
	for field, keys := range map[string][]string{
		"model": {"model", "model_name", "model_name_or_path", "model_type", "arch", "architecture",
			"model_id", "pretrained_model_name_or_path", "model_path", "base_model", "backbone", "network", "net"},
		"dataset": {"dataset", "dataset_name", "data", "data_path", "data_dir", "train_file", "train_data",
			"dataset_path", "train_data_path", "data_name", "dataset_dir", "data_root", "train_dataset"},
		"batch_size": {"batch_size", "bs", "per_device_train_batch_size", "train_batch_size", "micro_batch_size",
			"global_batch_size", "train_micro_batch_size_per_gpu", "per_gpu_train_batch_size", "batch"},
		"epochs": {"epochs", "num_epochs", "num_train_epochs", "max_epochs", "n_epochs", "epoch"},
		"steps": {"steps", "max_steps", "train_steps", "num_steps", "total_steps", "train_iters", "max_iters",
			"iterations", "num_iterations", "total_iters", "max_train_steps", "num_train_steps"},
		"seq_len": {"seq_len", "seq_length", "max_seq_length", "max_seq_len", "max_length", "block_size",
			"context_length", "sequence_length", "ctx_len", "cutoff_len", "model_max_length"},
		"lr":        {"lr", "learning_rate"},
		"precision": {"precision", "mixed_precision", "dtype", "torch_dtype"},
		"task":      {"task", "task_name"},
		"nodes":     {"num_nodes", "nnodes"},
		"gpus":      {"num_gpus", "nproc_per_node", "gpus", "devices", "num_processes"},
	} {
		for _, k := range keys {
			aliases[k] = field
		}
	}
}

// precisionFlags are value-less arguments that set the precision.
var precisionFlags = map[string]string{"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "tf32": "tf32", "half": "fp16"}

// maxValue bounds a metadata value's length.
const maxValue = 200

// normKey lower-cases a key and reduces "--train.max-steps" to "max_steps".
func normKey(k string) string {
	k = strings.ToLower(strings.TrimLeft(k, "-+~"))
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		k = k[i+1:]
	}
	return strings.ReplaceAll(k, "-", "_")
}

// nameKeys are keys that name their parent: model.name, dataset.path.
var nameKeys = map[string]bool{"name": true, "path": true, "id": true, "type": true, "name_or_path": true}

// fieldFor maps a key, with the key of its parent section (or the previous
// segment of a dotted key), to a metadata field.
func fieldFor(key, parent string) (string, bool) {
	k := normKey(key)
	if i := strings.LastIndexByte(strings.TrimRight(key, "."), '.'); i >= 0 && parent == "" {
		parent = key[:i]
	}
	if nameKeys[k] && parent != "" {
		if f, ok := aliases[normKey(parent)]; ok && (f == "model" || f == "dataset") {
			return f, true
		}
	}
	f, ok := aliases[k]
	return f, ok
}

// setField stores a metadata value under its field; override replaces an
// existing one.
func setField(meta map[string]string, key, val string, override bool) {
	setFieldIn(meta, key, "", val, override)
}

// setFieldIn is setField for a key inside a parent section.
func setFieldIn(meta map[string]string, key, parent, val string, override bool) {
	field, ok := fieldFor(key, parent)
	if !ok {
		return
	}
	val = strings.TrimSpace(val)
	if val == "" || val == "None" || val == "null" || len(val) > maxValue {
		return
	}
	if field == "dataset" || field == "model" {
		val = strings.TrimSuffix(filepath.ToSlash(val), "/")
	}
	if _, exists := meta[field]; exists && !override {
		return
	}
	meta[field] = val
}

// fromArgs reads --key value, --key=value and Hydra key=value arguments.
func fromArgs(args []string, meta map[string]string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			if k, v, ok := strings.Cut(a, "="); ok {
				setField(meta, k, v, true)
			}
			continue
		}
		k, v, hasVal := strings.Cut(a, "=")
		if !hasVal {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.Contains(args[i+1], "=") {
				v = args[i+1]
				i++
			} else if p, ok := precisionFlags[normKey(k)]; ok {
				meta["precision"] = p
				continue
			}
		}
		setField(meta, k, v, true)
	}
}

// maxConfigNodes bounds the nodes walked in one config file.
const maxConfigNodes = 20000

// fromConfig reads metadata from a YAML, JSON or TOML config file; existing
// fields (from arguments) win.
func fromConfig(path string, data []byte, meta map[string]string, notes *[]string) {
	var doc any
	var err error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		err = dec.Decode(&doc)
	case ".toml":
		var m map[string]any
		_, err = toml.Decode(string(data), &m)
		doc = m
	default:
		err = yaml.Unmarshal(data, &doc)
	}
	if err != nil {
		*notes = append(*notes, fmt.Sprintf("%s: not valid config: %v", path, firstLine(err.Error())))
		return
	}
	budget := maxConfigNodes
	walkConfig(doc, "", "", meta, 0, &budget)
}

// walkConfig visits scalar leaves, mapping their key names.
func walkConfig(node any, key, parent string, meta map[string]string, depth int, budget *int) {
	*budget--
	if *budget < 0 || depth > 16 {
		return
	}
	switch v := node.(type) {
	case map[string]any:
		for k, child := range v {
			walkConfig(child, k, key, meta, depth+1, budget)
		}
	case []any:
		for _, child := range v {
			walkConfig(child, key, parent, meta, depth+1, budget)
		}
	case nil:
	default:
		if key != "" {
			setFieldIn(meta, key, parent, scalarString(v), false)
		}
	}
}

// scalarString formats a config scalar.
func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

var (
	pretrainedRe = lazyre.New(`from_pretrained\(\s*["']([^"'\n]{1,200})["']`)
	datasetRe    = lazyre.New(`load_dataset\(\s*["']([^"'\n]{1,200})["'](?:\s*,\s*["']([^"'\n]{1,100})["'])?`)
	timmRe       = lazyre.New(`timm\.create_model\(\s*["']([^"'\n]{1,100})["']`)
	visionRe     = lazyre.New(`torchvision\.models\.([a-z][a-z0-9_]{1,60})\(`)
	argumentRe   = lazyre.New(`add_argument\(\s*["'](-{1,2}[A-Za-z][\w.-]{0,80})["']([^)\n]{0,400})`)
	defaultRe    = lazyre.New(`default\s*=\s*(?:["']([^"'\n]{0,200})["']|([\w.+-]{1,60}))`)
	importRe     = lazyre.New(`(?m)^\s*(?:import|from)\s+(megatron|deepspeed|lightning|pytorch_lightning|transformers|torch|jax|flax|tensorflow|keras|mxnet|paddle)\b`)
)

// frameworkRank orders imported frameworks, most specific first.
var frameworkRank = []string{"megatron", "deepspeed", "lightning", "pytorch_lightning", "transformers", "flax", "jax", "keras", "tensorflow", "mxnet", "paddle", "torch"}

// fromPython reads an entry script: argparse defaults, Hugging Face model and
// dataset names, timm/torchvision models and the framework imported.
// Existing fields win.
func fromPython(src string, meta map[string]string) {
	for _, m := range argumentRe().FindAllStringSubmatch(src, 200) {
		if d := defaultRe().FindStringSubmatch(m[2]); d != nil {
			val := d[1]
			if val == "" {
				val = d[2]
			}
			setField(meta, m[1], val, false)
		}
	}
	if m := pretrainedRe().FindStringSubmatch(src); m != nil {
		setField(meta, "model", m[1], false)
	}
	if m := timmRe().FindStringSubmatch(src); m != nil {
		setField(meta, "model", m[1], false)
	}
	if m := visionRe().FindStringSubmatch(src); m != nil {
		setField(meta, "model", m[1], false)
	}
	if m := datasetRe().FindStringSubmatch(src); m != nil {
		name := m[1]
		if m[2] != "" {
			name += "/" + m[2]
		}
		setField(meta, "dataset", name, false)
	}
	found := map[string]bool{}
	for _, m := range importRe().FindAllStringSubmatch(src, 100) {
		found[m[1]] = true
	}
	for _, fw := range frameworkRank {
		if found[fw] {
			if fw == "torch" {
				fw = "pytorch"
			}
			if cur, ok := meta["framework"]; !ok || cur == "pytorch" {
				meta["framework"] = strings.TrimPrefix(fw, "pytorch_")
			}
			break
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
