package logclass

import (
	"testing"

	"github.com/schedmate/schedmate/internal/logtext"
)

func TestLine(t *testing.T) {
	tests := []struct {
		line string
		want Class
	}{
		{"RuntimeError: CUDA error: an illegal memory access was encountered", Error},
		{"[rank3]: KeyError: 'RANK'", Error},
		{"Traceback (most recent call last):", Error},
		{"[E socket.cpp:793] [c10d] The client socket has timed out after 60s", Error},
		{"F0426 17:52:54.043815 30811 hl_cuda_device.cc:565] Check failed: cudaSuccess == cudaStat", Error},
		{"srun: error: node12: task 0: Exited with exit code 1", Error},
		{"gpu1:12:13 [0] misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable", Error},
		{"gpu1:12:13 [0] NCCL WARN NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.", Warning},
		{"/x/checkpoint.py:460: UserWarning: use_reentrant parameter should be passed explicitly", Warning},
		{"[2020-12-24 16:25:13,160] [WARNING] [runner.py:117:fetch_hostfile] Unable to find hostfile", Warning},
		{"  [2025-09-11 14:09:19,563233][W][adapter:76] model.safetensors.index.json not found", Warning},
		{"DeprecationWarning: pkg_resources is deprecated as an API", Warning},
		{"{'loss': 0.31, 'mean_squared_error': 0.1, 'error_rate': 0.02, 'epoch': 1.0}", Progress},
		{" 98%|█████████▊| 2086/2120 [26:01<00:22,  1.49it/s]", Progress},
		{"iteration     1200/  100000 | elapsed time per iteration (ms): 912.4 | lm loss: 3.41", Progress},
		{"1875/1875 [==============================] - 29s 15ms/step - loss: 0.29", Progress},
		{"Epoch: [2]  [1200/5004]  eta: 0:41:02  lr: 0.001000  loss: 2.8131", Progress},
		{"/pytorch/aten/src/ATen/native/cuda/Loss.cu:245: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [7,0,0] Assertion `t >= 0 && t < n_classes` failed.", Error},
		{"[rank0]: /pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_kernel: block: [0,0,0], thread: [1,0,0] Assertion `t < steps[0]` failed.", Error},
		{"/pytorch/aten/src/ATen/native/hip/Indexing.hip:1292: indexSelectLargeIndex: Device-side assertion `srcIndex < srcSelectDimSize' failed.", Error},
		{"Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", Other},
		{"INFO:root:Loading config from configs/errors/base.yaml", Other},
		{"Saving model checkpoint to ./out", Other},
		{"", Other},
	}
	for _, tt := range tests {
		if got := Line(tt.line); got != tt.want {
			t.Errorf("Line(%q) = %s, want %s", tt.line, got, tt.want)
		}
	}
}

func TestChunk(t *testing.T) {
	tests := []struct {
		lines []string
		want  Class
	}{
		{[]string{"hello", "step 3 | loss 2.1 | 400 ms/step", "UserWarning: x"}, Progress},
		{[]string{"hello", "UserWarning: x"}, Warning},
		{[]string{"step 3 | loss 2.1 | 400 ms/step", "NameError: name 'x' is not defined"}, Error},
		{nil, Other},
	}
	for _, tt := range tests {
		if got := Chunk(tt.lines); got != tt.want {
			t.Errorf("Chunk(%q) = %s, want %s", tt.lines, got, tt.want)
		}
	}
}

func FuzzLine(f *testing.F) {
	f.Add([]byte("RuntimeError: x"))
	f.Add([]byte("\x1b[31m 50%|##| 1/2 [00:01<00:01, 1.0it/s]\r"))
	f.Add([]byte("Loss.cu:245: k: block: [0,0,0], thread: [7,0,0] Assertion `t < steps[0]` failed."))
	f.Add([]byte("Indexing.hip:1292: k: Device-side assertion `srcIndex < n' failed."))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c := Line(logtext.Clean(raw))
		if c < Other || c > Error {
			t.Fatalf("class %d out of range", c)
		}
	})
}
