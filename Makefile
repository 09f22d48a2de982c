# schedmate build, test and release targets. `make help` lists them.
GO        ?= go
BIN       ?= bin/schedmate
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -s -w -X github.com/schedmate/schedmate/internal/buildinfo.Version=$(VERSION) \
             -X github.com/schedmate/schedmate/internal/buildinfo.Commit=$(COMMIT)
PREFIX    ?= /usr/local

.PHONY: help build build-nocgo test integration bench lint generate check-generated demo install test-all clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

build: ## build bin/schedmate
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/schedmate

build-nocgo: ## build without cgo (GPU features report unavailable)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/schedmate-nocgo ./cmd/schedmate

test: ## unit tests (no Slurm needed)
	$(GO) test ./...

integration: build ## tests against the real local Slurm (root; brings it up)
	contrib/localslurm/up.sh
	SCHEDMATE_SLURM_INTEGRATION=1 SCHEDMATE_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 30m ./test/... ./slurm/...

bench: ## benchmarks with the figures the project tracks
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./...

lint: ## gofmt and go vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...

generate: ## regenerate man pages and shell completions
	$(GO) run ./cmd/gen-docs -man man -completions completions

check-generated: generate ## fail when committed docs differ from the code
	@git diff --exit-code -- man completions || (echo "man/ or completions/ are stale: run 'make generate'"; exit 1)

demo: build ## the main job: local Slurm + schedmate end to end
	contrib/demo.sh

test-all: ## everything, on a fresh Debian 12 as root: install, unit, integration
	contrib/test-all.sh

install: build ## install binary, man pages, completions and hooks under PREFIX
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/schedmate
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/schedmate/contrib
	install -m 0644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 completions/schedmate.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/schedmate
	install -D -m 0644 completions/_schedmate $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_schedmate
	install -D -m 0644 completions/schedmate.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/schedmate.fish
	install -m 0644 contrib/job_submit.lua $(DESTDIR)$(PREFIX)/share/schedmate/contrib/
	install -m 0755 contrib/epilog-slurmctld.sh contrib/node-prolog.sh contrib/node-epilog.sh contrib/healthcheck.sh $(DESTDIR)$(PREFIX)/share/schedmate/contrib/

clean: ## remove build output
	rm -rf bin
