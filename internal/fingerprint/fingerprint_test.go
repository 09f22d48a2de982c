package fingerprint

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/golden"
)

// stable is the part of a fingerprint that does not depend on where the
// test runs.
type stable struct {
	Options   map[string]string `json:"options"`
	Launcher  string            `json:"launcher"`
	Entry     string            `json:"entry"`
	Command   string            `json:"command"`
	GitBranch string            `json:"git_branch"`
	GitCommit string            `json:"git_commit"`
	Metadata  map[string]string `json:"metadata"`
	Files     []string          `json:"files"`
	Notes     []string          `json:"notes"`
}

// projectCopy copies testdata/project into a fresh directory, turning its
// dot-git folder into .git (git does not keep a .git folder in a checkout).
func projectCopy(t *testing.T) string {
	t.Helper()
	src := filepath.Join("testdata", "project")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = strings.Replace(rel, "dot-git", ".git", 1)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestExtractGolden(t *testing.T) {
	fp, err := Extract(Input{Script: "train.sbatch", WorkDir: projectCopy(t)})
	if err != nil {
		t.Fatal(err)
	}
	s := stable{Options: fp.Options, Launcher: fp.Launcher, Entry: fp.Entry, Command: fp.Command,
		GitBranch: fp.GitBranch, GitCommit: fp.GitCommit, Metadata: fp.Metadata, Notes: fp.Notes}
	for _, f := range fp.Files {
		s.Files = append(s.Files, filepath.Base(f.Path))
	}
	got, _ := json.MarshalIndent(s, "", "  ")
	golden.Check(t, filepath.Join("testdata", "project.golden.json"), append(got, '\n'))
	if len(fp.Hash) != 32 {
		t.Errorf("hash %q", fp.Hash)
	}
}

func TestParseLaunch(t *testing.T) {
	tests := []struct {
		line     string
		launcher string
		entry    string
		args     []string
		configs  []string
	}{
		{"python train.py --lr 1e-3", "python", "train.py", []string{"--lr", "1e-3"}, nil},
		{"python3 -u -m mypkg.train --epochs 5", "python", "mypkg.train", []string{"--epochs", "5"}, nil},
		{"python -m torch.distributed.run --nproc_per_node 8 main.py --cfg a.yaml", "torchrun", "main.py", []string{"--cfg", "a.yaml"}, []string{"a.yaml"}},
		{"srun -n 4 --gpus-per-node=4 python train.py", "python", "train.py", nil, nil},
		{"torchrun --standalone --nnodes=1 --nproc-per-node=8 train.py model=llama", "torchrun", "train.py", []string{"model=llama"}, nil},
		{"deepspeed --num_gpus 8 train.py --deepspeed ds_config.json", "deepspeed", "train.py", []string{"--deepspeed", "ds_config.json"}, []string{"ds_config.json"}},
		{"accelerate launch --config_file acc.yaml --num_processes 8 run.py --bs 4", "accelerate", "run.py", []string{"--bs", "4"}, []string{"acc.yaml", "run.py"}[:1]},
		{"CUDA_VISIBLE_DEVICES=0,1 exec python run.py", "python", "run.py", nil, nil},
		{"apptainer exec --nv img.sif python train.py", "python", "train.py", nil, nil},
		{"./simulate input.dat", "exec", "./simulate", []string{"input.dat"}, nil},
		{`loss=$(awk -v i="$i" 'BEGIN { print i }')`, "", "", nil, nil},
		{"python train.py --config-path conf --config-name exp1", "python", "train.py", []string{"--config-path", "conf", "--config-name", "exp1"}, []string{"conf/exp1.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			l := parseLaunch(tokenize(tc.line), nil)
			if l.launcher != tc.launcher || l.entry != tc.entry || !reflect.DeepEqual(l.args, tc.args) && len(tc.args)+len(l.args) > 0 {
				t.Errorf("got launcher %q entry %q args %q", l.launcher, l.entry, l.args)
			}
			if !reflect.DeepEqual(l.configs, tc.configs) && len(tc.configs)+len(l.configs) > 0 {
				t.Errorf("configs = %q, want %q", l.configs, tc.configs)
			}
		})
	}
}

func TestParseScript(t *testing.T) {
	body := `#!/bin/bash
#SBATCH -J myjob -p gpu
#SBATCH --time=1-00:00:00
#SBATCH --gres gpu:a100:4
set -e
module load python  # not the payload
EPOCHS=10
echo "run $EPOCHS"   ; cd $HOME
srun bash -c 'echo hi'
python train.py --epochs $EPOCHS --data "my data" > out.log 2>&1
#SBATCH --partition=ignored
`
	s := parseScript(body)
	want := map[string]string{"job-name": "myjob", "partition": "gpu", "time": "1-00:00:00", "gres": "gpu:a100:4"}
	if !reflect.DeepEqual(s.options, want) {
		t.Errorf("options = %v, want %v", s.options, want)
	}
	if got := strings.Join(s.launch, " "); got != "python train.py --epochs 10 --data my data" {
		t.Errorf("launch = %q", got)
	}
}

func TestMetadataSources(t *testing.T) {
	meta := map[string]string{}
	fromArgs([]string{"--model_name_or_path", "gpt2", "--per-device-train-batch-size=16", "trainer.max_steps=500", "--fp16", "data.name=c4"}, meta)
	var notes []string
	fromConfig("c.toml", []byte("[train]\nepochs = 3\nmax_steps = 1\n[model]\nname = \"ignored\"\n"), meta, &notes)
	fromConfig("c.json", []byte(`{"max_seq_length": 1024, "dataset": {"path": "ignored"}}`), meta, &notes)
	fromConfig("bad.yaml", []byte("a: [unclosed"), meta, &notes)
	fromPython(`import lightning as L
parser.add_argument("--lr", type=float, default=3e-4)
m = timm.create_model("vit_base_patch16_224")`, meta)
	want := map[string]string{
		"model": "gpt2", "batch_size": "16", "steps": "500", "precision": "fp16", "dataset": "c4",
		"epochs": "3", "seq_len": "1024", "lr": "3e-4", "framework": "lightning",
	}
	if !reflect.DeepEqual(meta, want) {
		t.Errorf("metadata = %v\nwant       %v", meta, want)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "bad.yaml") {
		t.Errorf("notes = %q", notes)
	}
}

func TestParseSbatchArgs(t *testing.T) {
	a, err := ParseSbatchArgs([]string{"-p", "gpu", "--time=2:00:00", "--exclusive", "-Jname", "-N", "2", "job.sh", "--lr", "1"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"partition": "gpu", "time": "2:00:00", "exclusive": "", "job-name": "name", "nodes": "2"}
	if !reflect.DeepEqual(a.Options, want) || a.Script != "job.sh" || !reflect.DeepEqual(a.ScriptArgs, []string{"--lr", "1"}) {
		t.Errorf("got %+v", a)
	}
	for _, bad := range [][]string{{"-p", "gpu"}, {"--wrap", "hostname"}, {"--time"}} {
		if _, err := ParseSbatchArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseScript(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "project", "train.sbatch"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add("#SBATCH --x\npython 'unterminated \\\n")
	f.Fuzz(func(t *testing.T, body string) {
		s := parseScript(body)
		l := parseLaunch(s.launch, []string{"a"})
		fromArgs(l.args, map[string]string{})
		if len(l.command) > 4096 {
			t.Fatalf("command too long: %d", len(l.command))
		}
	})
}

func FuzzConfig(f *testing.F) {
	f.Add("c.yaml", []byte("model:\n  name: x\nbatch_size: 4\n"))
	f.Add("c.json", []byte(`{"epochs": 3}`))
	f.Add("c.toml", []byte("steps = 5\n"))
	f.Add("c.yaml", []byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		var notes []string
		fromConfig(name, data, map[string]string{}, &notes)
	})
}

func FuzzPython(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "project", "train.py"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Fuzz(func(t *testing.T, src string) {
		meta := map[string]string{}
		fromPython(src, meta)
		for k, v := range meta {
			if len(v) > maxValue {
				t.Fatalf("%s: value of %d bytes", k, len(v))
			}
		}
	})
}
