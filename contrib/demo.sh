#!/usr/bin/env bash
# schedmate's main job, end to end on a real local Slurm (as root on Debian
# 12): brings the cluster up, then shows each service on real jobs —
# estimates at submit that learn from history, live progress from a running
# job's log, the root cause of failed jobs with the requeue of an
# infrastructure failure, node health from a real nccl-tests output, and
# the recorded history. `make demo` runs it too.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
bin="$repo/bin/schedmate"
work=$(mktemp -d /tmp/schedmate-demo.XXXXXX)
chmod 755 "$work"

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
	step() { printf '\n== %s\n' "$*"; }
fi
wait_done() { # wait until the jobs have left the queue
	for _ in $(seq 1 240); do
		[ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ] && return 0
		sleep 0.5
	done
	echo "job $1 still queued" >&2
}

export PATH="$PATH:/usr/local/go/bin"
go build -o "$bin" ./cmd/schedmate
step "bringing up a local Slurm (contrib/localslurm/up.sh)"
NODES="${NODES:-4}" contrib/localslurm/up.sh
sinfo

cp contrib/demo/*.sbatch "$work/"
cd "$work"

step "estimates at submit: three runs of the same training job"
for run in 1 2 3; do
	id=$("$bin" sbatch --parsable -o "$work/%x-%j.out" train.sbatch)
	echo "submitted job $id"
	wait_done "$id"
done
echo "the job's own AdminComment, set by job_submit.lua:"
id=$("$bin" sbatch --parsable -o "$work/%x-%j.out" train.sbatch)
scontrol show job "$id" | grep -o 'AdminComment=.*' || true
"$bin" estimate train.sbatch

step "live progress of the running job"
sleep 3
"$bin" metrics "$id" || true
"$bin" top --once --all || true
wait_done "$id"

step "a job killed by a network fault: diagnosed and requeued away from its node"
bad=$(sbatch --parsable -o "$work/%x-%j.out" nccl-failure.sbatch)
sleep 8
scontrol show job "$bad" | grep -oE 'JobState=[A-Z_]+|Restarts=[0-9]+|ExcNodeList=[^ ]+' || true
"$bin" diagnose --log "$work/demo-nccl-$bad.out" || true
scancel "$bad" 2>/dev/null || true

step "a job with a bug in the user's code: diagnosed, not requeued"
bug=$(sbatch --parsable -o "$work/%x-%j.out" user-bug.sbatch)
wait_done "$bug"
sleep 1
"$bin" diagnose "$bug" || true

step "node health: a real nccl-tests output"
"$bin" health parse "$repo/test/ncclstandin/recordings/healthy.txt" || true
"$bin" health parse "$repo/test/ncclstandin/recordings/slow.txt" || true
"$bin" health check || true

step "the recorded history"
"$bin" history list --limit 10

echo
echo "demo files are in $work; take the cluster down with contrib/localslurm/down.sh"
