#!/bin/bash
# down.sh: stop the daemons contrib/localslurm/up.sh started, by the pids it
# recorded (never by name). Packages, configuration and the accounting
# database stay, so the next up.sh is quick.
set -uo pipefail

STATE_DIR=${STATE_DIR:-/run/schedmate-localslurm}
[[ -d $STATE_DIR ]] || exit 0

# stop PIDFILE: TERM the recorded pid, wait up to 15s, then KILL it.
stop() {
	local pidfile=$1 pid i
	[[ -s $pidfile ]] || { rm -f "$pidfile"; return; }
	pid=$(cat "$pidfile")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null
		for ((i = 0; i < 30; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	fi
	rm -f "$pidfile"
}

# Reverse start order: compute nodes, controller, accounting, database, munge.
for f in "$STATE_DIR"/slurmd-*.pid; do
	[[ -e $f ]] && stop "$f"
done
stop "$STATE_DIR/slurmctld.pid"
stop "$STATE_DIR/slurmdbd.pid"
stop "$STATE_DIR/mariadb.pid"
stop "$STATE_DIR/munged.pid"
rm -f "$STATE_DIR/ready"
