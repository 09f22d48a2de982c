#!/bin/bash
# Runs schedmate's real-hardware checks on a machine with an NVIDIA GPU and
# PyTorch: the NVML test and `health check` on the real driver, a
# `health sample` of a real training run beside nvidia-smi dmon, real
# training runs of several frameworks (with their measured step times) read
# live and at the end by `schedmate metrics`, and real failing runs read by
# `schedmate diagnose`. Everything lands in DEST (default /tmp/realruns/out).
#
#   test/realruns/run.sh BIN GPU_TEST_BINARY [DEST]
#
# ONLY="name ..." runs just those steps (nvml, sample, a training style, or
# fail-KIND).
set -u
here=$(cd "$(dirname "$0")" && pwd)
sm=$(realpath "$1")
gputest=$(realpath "$2")
dest=${3:-/tmp/realruns/out}
work=/tmp/realruns/work
mkdir -p "$dest" "$work"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
cd "$here" || exit 1
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

if want nvml; then
	{ nvidia-smi; nvidia-smi -q; } >"$dest/nvidia-smi.txt" 2>&1
	SCHEDMATE_TEST_NVML=1 "$gputest" -test.v -test.run TestRealDevice >"$dest/nvml-test.txt" 2>&1
	echo "nvml test exit $?" >>"$dest/nvml-test.txt"
	"$sm" health check --no-act --json --xid-wait 3s >"$dest/health-check.json" 2>"$dest/health-check.err"
	echo "exit $?" >>"$dest/health-check.err"
fi

cat >"$work/config.yaml" <<CONF
version: 1
store:
  path: $work/db/schedmate.db
health:
  gpu_spool_dir: $work/spool
  sample_interval: 1s
CONF

# live: read the log while the run is going, once it has passed $2 lines matching $3
live() {
	local log=$1 after=$2 pattern=$3 i
	for i in $(seq 600); do
		[ "$(tr '\r' '\n' <"$log" 2>/dev/null | grep -c -E "$pattern")" -ge "$after" ] && break
		sleep 0.2
	done
	"$sm" metrics --log "$log" --json >"$log.live.json" 2>&1
}

train() {
	local name=$1 pattern=$2 after=$3
	shift 3
	want "$name" || return 0
	"$@" >"$dest/$name.log" 2>&1 &
	local pid=$!
	live "$dest/$name.log" "$after" "$pattern"
	wait "$pid"
	echo "exit $?" >"$dest/$name.exit"
	"$sm" metrics --log "$dest/$name.log" --json >"$dest/$name.log.final.json" 2>&1
}

# The GPU sampler and nvidia-smi dmon side by side over a training run.
if want sample; then
	nvidia-smi dmon -s um -d 1 >"$dest/dmon.txt" 2>&1 &
	dmon=$!
	SLURM_JOB_ID=101 CUDA_VISIBLE_DEVICES=0 "$sm" --config "$work/config.yaml" health sample --job 101 --interval 1s --pid-file "$work/sample.pid" >"$dest/sample.out" 2>&1 &
	sampler=$!
	python3 train.py --style nanogpt --steps 600 --truth "$work/sampled.truth.json" >"$work/sampled.log" 2>&1
	kill -TERM "$sampler"
	wait "$sampler"
	kill "$dmon"
	find "$work/spool" -type f -exec cat {} + >"$dest/sample.spool.json" 2>&1
fi

train lightning 'it/s|s/it' 150 python3 train.py --style lightning --steps 400 --truth "$dest/lightning.truth.json"
train lightning-epochs 'it/s|s/it' 250 python3 train.py --style lightning-epochs --steps 400 --truth "$dest/lightning-epochs.truth.json"
train lightning-tqdm 'it/s|s/it' 150 python3 train.py --style lightning-tqdm --steps 400 --truth "$dest/lightning-tqdm.truth.json"
train hf-accum "'loss'" 15 python3 train.py --style hf-accum --steps 300 --truth "$dest/hf-accum.truth.json"
train pylogging ' step ' 15 python3 train.py --style pylogging --steps 300 --truth "$dest/pylogging.truth.json"
train hf "'loss'" 15 python3 train.py --style hf --steps 300 --truth "$dest/hf.truth.json"
train hf-eval "'loss'" 15 python3 train.py --style hf-eval --steps 300 --truth "$dest/hf-eval.truth.json"
train accelerate 'it/s|s/it' 150 python3 train.py --style accelerate --steps 300 --truth "$dest/accelerate.truth.json"
train nanogpt-slow '^iter ' 27 python3 train.py --style nanogpt --steps 320 --slow-from 200 --truth "$dest/nanogpt-slow.truth.json"
train torchrun-tee 'iter ' 20 torchrun --standalone --nproc_per_node 1 --tee 3 train.py --style nanogpt --steps 300 --truth "$dest/torchrun-tee.truth.json"

fail() {
	local kind=$1
	shift
	want "fail-$kind" || return 0
	"$@" >"$dest/fail-$kind.log" 2>&1
	echo "exit $?" >"$dest/fail-$kind.exit"
	"$sm" diagnose --log "$dest/fail-$kind.log" --json >"$dest/fail-$kind.log.diagnose.json" 2>&1
}
for kind in oom device-assert worker-killed missing-data; do
	fail "$kind" python3 fail.py --kind "$kind"
done
for kind in dup-gpu rank-keyerror; do
	fail "$kind" env NCCL_DEBUG=WARN torchrun --standalone --nproc_per_node 2 fail.py --kind "$kind"
done
fail store-timeout env RANK=1 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=10.255.255.1 MASTER_PORT=29500 python3 fail.py --kind store-timeout
fail rdzv-timeout timeout 150 torchrun --nnodes 2 --nproc_per_node 1 --rdzv-backend c10d --rdzv-endpoint 10.255.255.1:29400 --rdzv-id job7 fail.py --kind missing-data
fail bad-arg python3 train.py --style hf --truth "$work/unused.json" --lr 1e-4
# A checkpoint filesystem that is full, and a /dev/shm too small for the
# DataLoader's batches (both real tmpfs limits; needs root).
if want fail-disk-full; then
	mkdir -p "$work/ckpt" && mount -t tmpfs -o size=64m tmpfs "$work/ckpt"
	fail disk-full python3 fail.py --kind disk-full --ckpt-dir "$work/ckpt"
	umount "$work/ckpt"
fi
if want fail-shm-full; then
	mount -o remount,size=16m /dev/shm
	fail shm-full python3 fail.py --kind shm-full
	mount -o remount,size=50% /dev/shm
fi
