#!/bin/bash
# up.sh: start a real single-host Slurm 22.05 (munge, mariadb, slurmdbd,
# slurmctld and NODES slurmd daemons) for schedmate development and tests.
# Run as root on Debian 12. Idempotent: a second run restarts nothing that is
# already up. Stop it with down.sh, which kills only the pids recorded here.
#
# Environment:
#   NODES=N          number of fake GPU nodes n1..nN (default 1), each with 4 CPUs and gpu:4
#   SCHEDMATE_BIN    schedmate binary used by job_submit.lua and the epilog (default <repo>/bin/schedmate)
#   STATE_DIR        pids and logs (default /run/schedmate-localslurm)
#   WAIT_S           how long to wait for nodes to become idle (default 90)
#   VERBOSE=1        show progress
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
NODES=${NODES:-1}
STATE_DIR=${STATE_DIR:-/run/schedmate-localslurm}
SPOOL=${SPOOL:-/var/spool/schedmate-localslurm}
WAIT_S=${WAIT_S:-90}
export SCHEDMATE_BIN=${SCHEDMATE_BIN:-$REPO/bin/schedmate}
CONF=/etc/slurm
CTLD_PORT=6817
DBD_PORT=6819
NODE_PORT0=17001
LOG=$STATE_DIR/up.log

mkdir -p "$STATE_DIR"
: >"$LOG"

say() { if [[ ${VERBOSE:-} == 1 ]]; then echo "localslurm: $*" >&2; fi; echo "== $*" >>"$LOG"; }
die() { echo "localslurm: $*" >&2; echo "localslurm: log: $LOG (daemon logs in $STATE_DIR)" >&2; exit 1; }
quiet() { "$@" >>"$LOG" 2>&1; }

# alive PIDFILE: the pid recorded in PIDFILE is a running process.
alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_for SECONDS WHAT CMD...: retry CMD until it succeeds or SECONDS pass.
wait_for() {
	local deadline=$((SECONDS + $1)) what=$2
	shift 2
	until "$@" >>"$LOG" 2>&1; do
		((SECONDS < deadline)) || die "timed out waiting for $what"
		sleep 0.5
	done
}

# record NAME PIDFILE CMD...: start CMD in the background unless NAME is already running.
record() {
	local name=$1 pidfile=$2
	shift 2
	if alive "$pidfile"; then say "$name already running"; return; fi
	say "starting $name"
	# setsid: a daemon must outlive the process group of whoever ran up.sh.
	setsid "$@" >>"$STATE_DIR/$name.out" 2>&1 </dev/null &
	echo $! >"$pidfile"
}

[[ $(id -u) == 0 ]] || die "must run as root"
[[ $NODES =~ ^[1-9][0-9]*$ ]] || die "NODES must be a positive integer, got '$NODES'"

# --- packages ---------------------------------------------------------------
pkgs=(munge slurmctld slurmd slurm-client slurm-wlm-basic-plugins lua5.3 slurmdbd mariadb-server)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	say "installing ${missing[*]}"
	quiet env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" ||
		{ quiet apt-get update -q && quiet env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; } ||
		die "apt-get install ${missing[*]} failed"
fi
# Several slurmd run on one host (slurmd -N name, one port each): Debian's
# regular build supports that; its emulator package is a front-end build, so
# keep the regular daemons selected. Start them by their plain names: Slurm
# checks its program name ("slurmctld") to enable the slurmdbd agent.
SLURMCTLD=/usr/sbin/slurmctld
SLURMD=/usr/sbin/slurmd
for d in slurmctld slurmd; do
	quiet update-alternatives --set "$d" "/usr/sbin/$d-wlm" || true
done

# --- munge ------------------------------------------------------------------
if [[ ! -s /etc/munge/munge.key ]]; then
	say "creating munge key"
	quiet mungekey -c -k /etc/munge/munge.key || die "mungekey failed"
	chown munge:munge /etc/munge/munge.key
	chmod 0400 /etc/munge/munge.key
fi
mkdir -p /run/munge && chown munge:munge /run/munge
if ! alive "$STATE_DIR/munged.pid"; then
	say "starting munged"
	# munged daemonizes and writes its own pid file.
	rm -f /run/munge/munged.pid
	quiet runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid || die "munged failed to start"
	wait_for 10 "munged" timeout 10 test -s /run/munge/munged.pid
	cp /run/munge/munged.pid "$STATE_DIR/munged.pid"
fi
wait_for 10 "munge to answer" timeout 10 sh -c 'munge -n | unmunge'

# --- mariadb ----------------------------------------------------------------
mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
if [[ ! -d /var/lib/mysql/mysql ]]; then
	say "initialising mariadb"
	quiet mariadb-install-db --user=mysql --datadir=/var/lib/mysql || die "mariadb-install-db failed"
fi
record mariadb "$STATE_DIR/mariadb.pid" /usr/sbin/mariadbd --user=mysql --datadir=/var/lib/mysql \
	--socket=/run/mysqld/mysqld.sock --pid-file=/run/mysqld/mysqld.pid --bind-address=127.0.0.1 \
	--log-error="$STATE_DIR/mariadb.log"
wait_for 60 "mariadb" timeout 10 mariadb -e 'SELECT 1'
DB_PASS_FILE=/etc/slurm/.schedmate-dbpass
if [[ ! -s $DB_PASS_FILE ]]; then
	(umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$DB_PASS_FILE")
fi
DB_PASS=$(cat "$DB_PASS_FILE")
quiet mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || die "creating the accounting database failed"

# --- configuration ----------------------------------------------------------
if ((NODES == 1)); then
	NODENAMES=n1 NODE_PORTS=$NODE_PORT0
else
	NODENAMES="n[1-$NODES]" NODE_PORTS="[$NODE_PORT0-$((NODE_PORT0 + NODES - 1))]"
fi
HOST=$(hostname -s)
render() {
	sed -e "s|@HOST@|$HOST|g" -e "s|@SPOOL@|$SPOOL|g" -e "s|@STATE@|$STATE_DIR|g" \
		-e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@DBD_PORT@|$DBD_PORT|g" -e "s|@DB_PASS@|$DB_PASS|g" \
		-e "s|@NODENAMES@|$NODENAMES|g" -e "s|@NODE_PORTS@|$NODE_PORTS|g" \
		-e "s|@EPILOG@|$REPO/contrib/epilog-slurmctld.sh|g" "$1"
}
mkdir -p "$CONF" "$SPOOL/ctld"
mkdir -p "$STATE_DIR/fakegpu" && touch "$STATE_DIR"/fakegpu/nvidia{0,1,2,3}
for ((i = 1; i <= NODES; i++)); do mkdir -p "$SPOOL/d/n$i"; done
(umask 077 && render "$HERE/slurmdbd.conf.tmpl" >"$CONF/slurmdbd.conf")
render "$HERE/slurm.conf.tmpl" >"$STATE_DIR/slurm.conf.new"
render "$HERE/gres.conf.tmpl" >"$CONF/gres.conf"
ln -sfn "$REPO/contrib/job_submit.lua" "$CONF/job_submit.lua"
chmod 0755 "$REPO/contrib/epilog-slurmctld.sh"
CONF_CHANGED=0
if ! cmp -s "$STATE_DIR/slurm.conf.new" "$CONF/slurm.conf"; then
	mv "$STATE_DIR/slurm.conf.new" "$CONF/slurm.conf"
	CONF_CHANGED=1
else
	rm -f "$STATE_DIR/slurm.conf.new"
fi

# --- slurmdbd ---------------------------------------------------------------
if ! alive "$STATE_DIR/slurmdbd.pid"; then
	say "starting slurmdbd"
	quiet /usr/sbin/slurmdbd || die "slurmdbd failed to start"
fi
wait_for 60 "slurmdbd" timeout 10 sacctmgr -n list cluster
if ! sacctmgr -n -P list cluster format=cluster 2>>"$LOG" | grep -qx schedmate; then
	quiet sacctmgr -i add cluster schedmate || die "sacctmgr add cluster failed"
fi

# --- slurmctld and slurmd ---------------------------------------------------
if alive "$STATE_DIR/slurmctld.pid" && ((CONF_CHANGED)); then
	# A changed node list needs a restart of every daemon, not a reconfigure.
	say "configuration changed: restarting slurm daemons"
	for f in "$STATE_DIR"/slurmd-*.pid "$STATE_DIR/slurmctld.pid"; do
		[[ -s $f ]] && kill "$(cat "$f")" 2>/dev/null || true
	done
	sleep 2
	rm -f "$STATE_DIR"/slurmd-*.pid "$STATE_DIR/slurmctld.pid"
fi
if ! alive "$STATE_DIR/slurmctld.pid"; then
	say "starting slurmctld"
	quiet "$SLURMCTLD" || die "slurmctld failed to start"
fi
wait_for 30 "slurmctld" timeout 10 scontrol ping
for ((i = 1; i <= NODES; i++)); do
	if ! alive "$STATE_DIR/slurmd-n$i.pid"; then
		say "starting slurmd n$i"
		quiet "$SLURMD" -N "n$i" || die "slurmd n$i failed to start"
	fi
done
# Stale slurmd daemons for nodes beyond NODES (from an earlier, larger run).
for f in "$STATE_DIR"/slurmd-n*.pid; do
	[[ -e $f ]] || continue
	n=${f##*/slurmd-n}
	n=${n%.pid}
	if ((n > NODES)); then kill "$(cat "$f")" 2>/dev/null || true; rm -f "$f"; fi
done

# nodes_idle: every configured node is idle, mixed or allocated. Nodes left
# down, drained or invalid by an earlier run are resumed.
nodes_idle() {
	local states bad
	states=$(timeout 10 sinfo -h -N -o '%N %T' | sort -u)
	echo "$states"
	bad=$(grep -vE ' (idle|mixed|allocated)$' <<<"$states" | grep -vE ' (unknown|not_responding)' | cut -d' ' -f1 | paste -sd, -)
	[[ -z $bad ]] || timeout 10 scontrol update NodeName="$bad" State=RESUME || true
	[[ $(wc -l <<<"$states") -eq $NODES ]] && [[ -z $bad ]] && ! grep -qvE ' (idle|mixed|allocated)$' <<<"$states"
}
wait_for "$WAIT_S" "$NODES node(s) to become idle" nodes_idle
say "up: $NODES node(s); state in $STATE_DIR"
echo "$STATE_DIR" >"$STATE_DIR/ready"
