package failure

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/logtext"
)

func diagnoseBytes(t testing.TB, data []byte, opts Options) *Diagnosis {
	t.Helper()
	f, err := logtext.NewFile(bytes.NewReader(data), int64(len(data)), "test.log")
	if err != nil {
		t.Fatalf("new file: %v", err)
	}
	d, err := Diagnose(f, opts)
	if err != nil {
		t.Fatalf("diagnose: %v", err)
	}
	return d
}

// progressLines returns n synthetic progress lines in a common trainer format.
func progressLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "step %d | loss %.4f | lr 3.0e-04 | 412.%d ms/step | 2.48M tok/s\n", i, 2.5-float64(i%1000)/1000, i%10)
	}
	return b.String()
}

func TestDiagnose(t *testing.T) {
	tests := []struct {
		name      string
		log       string
		category  Category
		component string
		line      int
	}{
		{"clean finish", progressLines(50) + "Training finished.\n", None, "", 0},
		{"benign error then recovery", "wandb: ERROR Error while calling W&B API (retrying)\n" + progressLines(10), None, "", 0},
		{"error inside loss names", "{'loss': 0.3, 'mean_squared_error': 0.1, 'error_rate': 0.02, 'epoch': 1.0}\n", None, "", 0},
		{"user printed xid is still gpu text", progressLines(3) + "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n", Infrastructure, ComponentGPU, 4},
		{"cuda oom is script", progressLines(2) + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", Script, ComponentOOM, 3},
		{"launcher summary after cause", progressLines(2) + "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\nNameError: name 'x' is not defined\nE0101 failed (exitcode: 1) local_rank: 0\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n", Script, "", 5},
		{"only a launcher summary", progressLines(2) + "srun: error: n1: task 0: Exited with exit code 1\n", Other, "", 3},
		{"time limit", progressLines(2) + "slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME LIMIT ***\n", Other, "", 3},
		{"host oom exit -9", progressLines(2) + "E0101 12:00:00 api.py:833] failed (exitcode: -9) local_rank: 0 (pid: 1) of binary: python\n", Infrastructure, ComponentNode, 3},
		{"disk full", "OSError: [Errno 28] No space left on device: '/tmp/x'\n", Infrastructure, ComponentNode, 1},
		{"driver warning long before crash", "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW\n" +
			progressLines(5) + "RuntimeError: No CUDA GPUs are available\n", Infrastructure, ComponentGPU, 1},
		{"crlf and ansi", "\x1b[31mRuntimeError: CUDA error: uncorrectable ECC error encountered\x1b[0m\r\n", Infrastructure, ComponentGPU, 1},
		{"rank prefixes", "0: step 1 | loss 2.1 | 400 ms/step\n3: [rank3]: KeyError: 'MASTER_ADDR'\n", Script, "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diagnoseBytes(t, []byte(tt.log), DefaultOptions())
			if d.Category != tt.category || d.Component != tt.component || d.Line != tt.line {
				t.Errorf("got %s/%s@%d %q (evidence %v), want %s/%s@%d", d.Category, d.Component, d.Line, d.Text, d.Evidence, tt.category, tt.component, tt.line)
			}
			if d.Failed() && (d.Confidence <= 0 || d.Confidence > 1 || d.Action == "") {
				t.Errorf("confidence %v action %q", d.Confidence, d.Action)
			}
		})
	}
}

func TestLongCascadeSearchesBack(t *testing.T) {
	var b strings.Builder
	b.WriteString(progressLines(2000))
	b.WriteString("gpu3:11:12 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4711> with error 12, opcode 0, len 0, vendor err 129\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "[rank%d]:[E ProcessGroupNCCL.cpp:1414] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error\n", i%64)
	}
	opts := DefaultOptions()
	opts.TailBytes = 64 << 10
	d := diagnoseBytes(t, []byte(b.String()), opts)
	if d.Category != Infrastructure || d.Component != ComponentNetwork || d.Line != 2001 {
		t.Fatalf("got %s/%s@%d %q", d.Category, d.Component, d.Line, d.Text)
	}
	if d.LinesClassified >= 5000 {
		t.Errorf("classified %d lines, want fewer than the whole log", d.LinesClassified)
	}
}

func TestDiagnoseFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		path string
		want error
	}{
		{"empty", write("empty.log", nil), logtext.ErrEmpty},
		{"binary", write("bin.log", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00")), logtext.ErrNotText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DiagnoseFile(tt.path, DefaultOptions()); err == nil || !strings.Contains(err.Error(), tt.want.Error()) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := DiagnoseFile(dir+"/missing.log", DefaultOptions()); err == nil {
		t.Fatal("missing file: no error")
	}
}

// watchdogNoise returns n lines of the timeouts a hung NCCL job prints for
// hours after the collective that never completed.
func watchdogNoise(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "[rank%d]:[E ProcessGroupNCCL.cpp:607] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600%03d milliseconds before timing out.\n", i%64, i%64, 88211+i/64, i%1000)
	}
	return b.String()
}

// ibRoot is the line that states the cause of the hang in hangLog.
const ibRoot = "gpu3:11:12 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4711> with error 12, opcode 0, len 0, vendor err 129\n"

// longLogs are 256K-line logs: one whose cause sits at the end, read from
// the tail window alone, and one whose cause is followed by 128K lines of
// watchdog noise, found by the binary search over chunks.
var longLogs = []struct {
	name     string
	data     []byte
	rootLine int
}{
	{"cause-at-end", []byte(progressLines(256<<10) + "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB\nsrun: error: n1: task 0: Exited with exit code 1\n"), 256<<10 + 3},
	{"cause-before-hours-of-noise", []byte(progressLines(128<<10) + ibRoot + watchdogNoise(128<<10-1)), 128<<10 + 1},
}

func TestLongLogs(t *testing.T) {
	for _, tt := range longLogs {
		t.Run(tt.name, func(t *testing.T) {
			d := diagnoseBytes(t, tt.data, DefaultOptions())
			if d.Line != tt.rootLine {
				t.Fatalf("root at line %d (%s), want %d", d.Line, d.Text, tt.rootLine)
			}
			if d.LinesClassified >= 64<<10 {
				t.Errorf("classified %d lines of 256K", d.LinesClassified)
			}
		})
	}
}

// BenchmarkDiagnose256K diagnoses 256K-line logs and reports how many lines
// the locator classified.
func BenchmarkDiagnose256K(b *testing.B) {
	for _, tt := range longLogs {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.data)))
			var classified int
			for b.Loop() {
				classified = diagnoseBytes(b, tt.data, DefaultOptions()).LinesClassified
			}
			b.ReportMetric(float64(classified), "lines-classified")
		})
	}
}

func FuzzDiagnose(f *testing.F) {
	f.Add([]byte("RuntimeError: CUDA error: uncorrectable ECC error encountered\n"))
	f.Add([]byte(progressLines(5) + "NameError: name 'x' is not defined"))
	f.Add([]byte("\r\r\n\x1b[31m\xff\xfeerror\n"))
	f.Add([]byte(progressLines(2) + assertLine(7) + progressLines(3) + cublasTraceback))
	f.Add([]byte(assertLine(0) + eccError))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := logtext.NewFile(bytes.NewReader(data), int64(len(data)), "fuzz.log")
		if err != nil {
			return
		}
		opts := DefaultOptions()
		opts.TailBytes, opts.HeadBytes = 256, 128
		d, err := Diagnose(file, opts)
		if err != nil {
			t.Fatalf("diagnose: %v", err)
		}
		if d.Line < 0 || d.Line > bytes.Count(data, []byte{'\n'})+1 {
			t.Fatalf("line %d out of range", d.Line)
		}
		if (d.Category == None) != (d.Line == 0) {
			t.Fatalf("category %s with line %d", d.Category, d.Line)
		}
	})
}

// assertLine returns the line a CUDA kernel prints for one thread whose
// device-side assertion failed.
func assertLine(thread int) string {
	return fmt.Sprintf("../aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [160,0,0], thread: [%d,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n", thread)
}

func repeatLines(n int, line func(int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(line(i))
	}
	return b.String()
}

const (
	cublasTraceback = "Traceback (most recent call last):\n  File \"train.py\", line 57, in loop\n    loss.backward()\n" +
		"RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`\n"
	assertTriggered = "RuntimeError: CUDA error: device-side assert triggered\n" +
		"CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n" +
		"For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n" +
		"Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
	illegalAccess = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
	eccError      = "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
)

func TestDeviceSideAssertions(t *testing.T) {
	tests := []struct {
		name      string
		log       string
		category  Category
		component string
		line      int
	}{
		{"cublas failure after the assertion", progressLines(3) + repeatLines(3, assertLine) + cublasTraceback, Script, "", 4},
		{"assert triggered after many threads", progressLines(3) + repeatLines(64, assertLine) + assertTriggered, Script, "", 4},
		{"illegal access after other ranks' progress", progressLines(3) + "[rank0]: " + assertLine(0) +
			progressLines(5) + "[rank0]: " + illegalAccess, Script, "", 4},
		{"hip assertion", progressLines(2) + "/pytorch/aten/src/ATen/native/hip/Indexing.hip:1292: indexSelectLargeIndex: Device-side assertion `srcIndex < srcSelectDimSize' failed.\n" +
			"RuntimeError: HIP error: device-side assert triggered\n", Script, "", 3},
		{"host error alone", progressLines(2) + assertTriggered, Script, "", 3},
		{"ecc fault after the assertion stays gpu", progressLines(2) + assertLine(0) + eccError, Infrastructure, ComponentGPU, 4},
		{"ecc fault before the assertion stays gpu", progressLines(2) + eccError + assertLine(0) + assertTriggered, Infrastructure, ComponentGPU, 3},
		{"xid after progress stays gpu", progressLines(2) + assertLine(0) + progressLines(5) + "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n", Infrastructure, ComponentGPU, 9},
		{"illegal access alone stays framework", progressLines(2) + illegalAccess + "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n", Framework, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diagnoseBytes(t, []byte(tt.log), DefaultOptions())
			if d.Category != tt.category || d.Component != tt.component || d.Line != tt.line {
				t.Errorf("got %s/%s@%d %q (evidence %v), want %s/%s@%d", d.Category, d.Component, d.Line, d.Text, d.Evidence, tt.category, tt.component, tt.line)
			}
		})
	}
}

func TestDeviceAssertSignature(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"/pytorch/aten/src/ATen/native/cuda/Loss.cu:245: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [7,0,0] Assertion `t >= 0 && t < n_classes` failed.", true},
		{"/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:94: operator(): block: [0,0,0], thread: [3,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.", true},
		{"/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:367: operator(): block: [0,0,0], thread: [12,0,0] Assertion `idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\"` failed.", true},
		{"/pytorch/aten/src/ATen/native/cuda/EmbeddingBag.cu:143: EmbeddingBag_updateOutputKernel_sum_mean: block: [2,0,0], thread: [0,1,0] Assertion `input[emb] < numRows` failed.", true},
		{"/pytorch/aten/src/THC/THCTensorIndex.cu:361: void indexSelectLargeIndex(TensorInfo<T, IndexType>, TensorInfo<long, IndexType>, int, int, IndexType, long) [with T = float, IndexType = unsigned int, DstDim = 2]: block: [179,0,0], thread: [96,0,0] Assertion `srcIndex < srcSelectDimSize` failed.", true},
		{"/tmp/torchinductor_u/ab/cab.py:21: unknown: block: [41, 0, 0], thread: [32, 0, 0] Assertion `index out of bounds: 0 <= tmp4 < 32000` failed.", true},
		{"/pytorch/aten/src/ATen/native/hip/Indexing.hip:1292: indexSelectLargeIndex: Device-side assertion `srcIndex < srcSelectDimSize' failed.", true},
		{"RuntimeError: CUDA error: device-side assert triggered", true},
		{"Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", false},
		{"AssertionError: t >= 0 && t < n_classes failed", false},
		{"Assertion `x` failed.", false},
		{"RuntimeError: CUDA error: uncorrectable ECC error encountered", false},
	}
	for _, tt := range tests {
		s := matchSignature(tt.text)
		if got := s != nil && s.role == deviceAssert; got != tt.want {
			t.Errorf("matchSignature(%q) = %v, want device-side assertion %v", tt.text, s, tt.want)
		}
	}
}
