#!/bin/sh
# EpilogSlurmctld wrapper: hands each finished job to `schedmate hook epilog`.
# slurmctld runs this with only the SLURM_* job variables in its environment, so
# the binary comes from SCHEDMATE_BIN, then /etc/default/schedmate, then the
# repository checkout this file lives in. It always exits 0: a missing or
# failing schedmate never holds up Slurm.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
[ -r /etc/default/schedmate ] && . /etc/default/schedmate
if [ -z "${SCHEDMATE_BIN:-}" ]; then
	here=$(cd "$(dirname "$0")" 2>/dev/null && pwd)
	SCHEDMATE_BIN="$here/../bin/schedmate"
fi
if [ -x "$SCHEDMATE_BIN" ]; then
	timeout "${SCHEDMATE_EPILOG_TIMEOUT:-60}" "$SCHEDMATE_BIN" hook epilog </dev/null >/dev/null 2>&1
fi
exit 0
