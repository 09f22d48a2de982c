#!/usr/bin/env bash
# End-to-end test of `schedmate top` against the real local Slurm: starts a
# job that prints training progress, drives the live view in an 80x24 tmux
# pane with real keys and compares the masked screens with golden files.
#
# Runs only when tmux is installed and SCHEDMATE_SLURM_INTEGRATION=1.
# UPDATE=1 rewrites the golden screens.
set -euo pipefail

if [[ "${SCHEDMATE_SLURM_INTEGRATION:-}" != 1 ]]; then
	echo "skip: set SCHEDMATE_SLURM_INTEGRATION=1 to run against the local Slurm"
	exit 0
fi
for tool in tmux sbatch squeue scancel go; do
	if ! command -v "$tool" >/dev/null; then
		echo "skip: $tool not installed"
		exit 0
	fi
done

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
golden="$here/testdata"
work=$(mktemp -d)
session="schedmate-top-$$"
jobid=""

cleanup() {
	tmux kill-session -t "$session" 2>/dev/null || true
	if [[ -n "$jobid" ]]; then scancel "$jobid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/schedmate" ./cmd/schedmate)
if ! "$work/schedmate" top --help >/dev/null 2>&1; then
	echo "FAIL: the schedmate binary has no top command" >&2
	exit 1
fi

# A job that logs like nanoGPT: one progress line every 0.1 s.
name="smtop-tmux-$$"
jobid=$(sbatch --parsable -J "$name" -o "$work/slurm-%j.out" -t 10 --wrap \
	'for i in $(seq 1 3000); do echo "iter $i/3000: loss 2.0000, time 100.00ms, mfu 10.00%"; sleep 0.1; done')
jobid=${jobid%%;*}
for _ in $(seq 1 60); do
	state=$(squeue -h -j "$jobid" -o %T 2>/dev/null || true)
	[[ "$state" == RUNNING ]] && break
	sleep 1
done
if [[ "$state" != RUNNING ]]; then
	echo "FAIL: job $jobid did not start (state: ${state:-gone})" >&2
	exit 1
fi
sleep 4 # let the log collect enough progress lines for a trend

# mask hides what changes from run to run: digits, clock times, bar and
# sparkline glyphs, the job name suffix and the user name.
mask() {
	sed -E \
		-e "s/$name/smtop-tmux-PID/g" \
		-e "s/\\b$(id -un)\\b/USER/g" \
		-e 's/[0-9]+/N/g' \
		-e 's/[▁▂▃▄▅▆▇█░]/=/g' \
		-e 's/[[:space:]]+$//'
}

capture() { tmux capture-pane -p -t "$session" | mask >"$work/$1"; }

compare() {
	if [[ "${UPDATE:-}" == 1 ]]; then
		cp "$work/$1" "$golden/$1"
		return
	fi
	if [[ ! -f "$golden/$1" ]]; then
		echo "FAIL: no golden screen $golden/$1; run once with UPDATE=1 and review it" >&2
		exit 1
	fi
	if ! diff -u "$golden/$1" "$work/$1"; then
		echo "FAIL: screen $1 differs from the golden file (UPDATE=1 rewrites it)" >&2
		exit 1
	fi
}

tmux new-session -d -s "$session" -x 80 -y 24 \
	"SCHEDMATE_LOG_FILE=$work/top.log $work/schedmate top --all --interval 1s"
sleep 3

# Filter down to our job so other jobs on the cluster do not matter.
tmux send-keys -t "$session" / "$name" Enter
sleep 2
capture top_list.screen
compare top_list.screen

tmux send-keys -t "$session" Enter
sleep 2
capture top_detail.screen
compare top_detail.screen

tmux send-keys -t "$session" Escape s
sleep 1
capture top_sorted.screen
compare top_sorted.screen

tmux send-keys -t "$session" q
sleep 1
if tmux has-session -t "$session" 2>/dev/null; then
	echo "FAIL: q did not quit" >&2
	exit 1
fi
echo "ok: schedmate top in tmux"
