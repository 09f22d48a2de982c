#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 machine as root: installs what
# the tests need (Go modules, tmux, and through contrib/localslurm/up.sh the
# Slurm daemons, munge, slurmdbd and MariaDB), then runs the unit tests, the
# static checks, a CGO_ENABLED=0 build, the generated-docs drift check and
# the integration tests against a real local Slurm, which it brings up and
# takes down again.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

log() { printf '\n==> %s\n' "$*"; }

export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null 2>&1; then
	log "installing Go (the module's toolchain line fetches the exact release)"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
fi
if [ "$(id -u)" -eq 0 ]; then
	missing=()
	for pkg in tmux git python3; do
		command -v "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]}"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	fi
fi

log "Go modules"
go mod download

log "static checks (gofmt, go vet)"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...

log "CGO_ENABLED=0 build"
CGO_ENABLED=0 go build -o /dev/null ./cmd/schedmate

log "generated docs are current"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go run ./cmd/gen-docs -man "$tmp/man" -completions "$tmp/completions"
diff -r "$tmp/man" man && diff -r "$tmp/completions" completions || {
	echo "man/ or completions/ are stale: run 'go run ./cmd/gen-docs' (make generate)"; exit 1; }

log "build"
go build -o bin/schedmate ./cmd/schedmate

log "unit tests"
go test -count=1 ./...

if [ "$(id -u)" -ne 0 ]; then
	echo "not root: skipping the integration tests against a real local Slurm"
	exit 0
fi

log "bringing up a real local Slurm"
NODES="${NODES:-8}" contrib/localslurm/up.sh
trap 'contrib/localslurm/down.sh || true; rm -rf "$tmp"' EXIT

log "integration tests against the local Slurm"
SCHEDMATE_SLURM_INTEGRATION=1 SCHEDMATE_BIN="$repo/bin/schedmate" \
	go test -count=1 -p 1 -timeout 40m ./test/... ./slurm/...
