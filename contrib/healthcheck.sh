#!/bin/sh
# HealthCheckProgram wrapper: runs `schedmate health check` on this node.
# The check drains the node itself ("schedmate: nvml: ...") when a GPU is
# faulty and resumes it when schedmate's own drain is no longer warranted; a
# node without GPU or driver is "unavailable", never drained. The binary
# comes from SCHEDMATE_BIN, then /etc/default/schedmate, then the repository
# checkout this file lives in; SCHEDMATE_HEALTHCHECK_TIMEOUT (default 50
# seconds) bounds the check, and extra arguments ("--dry-run") are passed on.
# The result goes to syslog when logger is present. It always exits 0.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
[ -r /etc/default/schedmate ] && . /etc/default/schedmate
if [ -z "${SCHEDMATE_BIN:-}" ]; then
	here=$(cd "$(dirname "$0")" 2>/dev/null && pwd)
	SCHEDMATE_BIN="$here/../bin/schedmate"
fi
[ -x "$SCHEDMATE_BIN" ] || exit 0
out=$(timeout "${SCHEDMATE_HEALTHCHECK_TIMEOUT:-50}" "$SCHEDMATE_BIN" health check "$@" </dev/null 2>&1)
if [ -n "$out" ] && command -v logger >/dev/null 2>&1; then
	printf '%s\n' "$out" | logger -t schedmate-healthcheck 2>/dev/null
fi
exit 0
