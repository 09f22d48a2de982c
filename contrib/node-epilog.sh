#!/bin/sh
# Node Epilog wrapper: stops the job's `schedmate health sample` started by
# contrib/node-prolog.sh and waits (at most SCHEDMATE_SAMPLE_STOP_WAIT
# seconds, default 10) for it to spool the job's GPU figures; the
# controller's `schedmate hook epilog` or `schedmate health ingest` merges
# them into the job's history. It signals only a process whose command line
# is that job's sampler, and always exits 0: a nonzero Epilog status would
# drain the node.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
[ -r /etc/default/schedmate ] && . /etc/default/schedmate
run_dir=${SCHEDMATE_RUN_DIR:-/run/schedmate}
case "${SLURM_JOB_ID:-}" in
'' | *[!0-9_]*) exit 0 ;;
esac
pid_file="$run_dir/sample.$SLURM_JOB_ID.pid"
[ -r "$pid_file" ] || exit 0
pid=$(head -c 32 "$pid_file" 2>/dev/null | tr -cd 0-9)
is_sampler() {
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\000' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "health sample --job $SLURM_JOB_ID "
}
if is_sampler; then
	kill -TERM "$pid" 2>/dev/null
	ticks=$((${SCHEDMATE_SAMPLE_STOP_WAIT:-10} * 5))
	while [ "$ticks" -gt 0 ] && is_sampler; do
		sleep 0.2
		ticks=$((ticks - 1))
	done
fi
rm -f "$pid_file"
exit 0
