#!/bin/sh
# Node Prolog wrapper: starts `schedmate health sample` for the job, detached,
# so that the node Epilog (contrib/node-epilog.sh) can stop it and have it
# spool the job's GPU figures (mean SM utilisation, peak memory, Xids) for the
# controller. slurmd runs this as root with the job's SLURM_* variables
# (SLURM_JOB_ID, SLURM_JOB_GPUS, SLURMD_NODENAME). The binary comes from
# SCHEDMATE_BIN, then /etc/default/schedmate, then the repository checkout
# this file lives in; the pid file lives in SCHEDMATE_RUN_DIR (default
# /run/schedmate). It never blocks the job and always exits 0: a nonzero
# Prolog status would drain the node.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
[ -r /etc/default/schedmate ] && . /etc/default/schedmate
if [ -z "${SCHEDMATE_BIN:-}" ]; then
	here=$(cd "$(dirname "$0")" 2>/dev/null && pwd)
	SCHEDMATE_BIN="$here/../bin/schedmate"
fi
run_dir=${SCHEDMATE_RUN_DIR:-/run/schedmate}
case "${SLURM_JOB_ID:-}" in
'' | *[!0-9_]*) exit 0 ;;
esac
[ -x "$SCHEDMATE_BIN" ] || exit 0
mkdir -p "$run_dir" 2>/dev/null || exit 0
pid_file="$run_dir/sample.$SLURM_JOB_ID.pid"
# setsid in the background of a non-interactive shell execs in place, so $!
# is the sampler itself; the pid file exists before this script returns, so
# an Epilog that follows at once still finds it.
setsid "$SCHEDMATE_BIN" health sample --job "$SLURM_JOB_ID" --pid-file "$pid_file" \
	</dev/null >>"$run_dir/sample.log" 2>&1 &
echo "$!" >"$pid_file.tmp" 2>/dev/null && mv -f "$pid_file.tmp" "$pid_file" 2>/dev/null
exit 0
