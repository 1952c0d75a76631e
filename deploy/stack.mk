# The stack's targets: images, the compose end-to-end test, the fault test across
# containers, the Kubernetes check and the workflow lint. Included by the top-level
# Makefile (include deploy/stack.mk).

ACTIONLINT_VERSION ?= v1.7.12
GOBIN_DIR := $(shell go env GOPATH)/bin

.PHONY: images-local compose-config compose-test fault-test k8s-check rules-test actionlint

images-local: ## Build the local base images from Debian packages (no registry needed) and select them in .env (installs debootstrap; sudo when not root)
	deploy/scripts/build-local-images.sh

compose-config: ## Check docker-compose.yml with the compose tool at hand
	@if docker compose version >/dev/null 2>&1; then docker compose config -q; else docker-compose config -q; fi
	@echo "docker-compose.yml: ok"

compose-test: ## Bring the compose stack up with local images, test it end to end, take it down
	deploy/scripts/compose-test.sh

fault-test: ## Chat and Redis containers on private networks under send and live load: Redis paused, a replica cut off Redis, Redis restarted, a replica killed, a Cluster primary failed over (docs/faults.md)
	deploy/scripts/fault-test.sh

k8s-check: ## Render deploy/k8s (base, production) with kustomize and check every object
	cd deploy/k8s/check && GOWORK=off go test -count=1 ./...

# promtool and amtool come with Debian's prometheus and prometheus-alertmanager packages
# (.ci/run installs them). The slow file holds the 3-day windows: about a minute.
PROMTOOL ?= promtool
AMTOOL ?= amtool
rules-test: ## Check and unit-test the alert and SLO rules (promtool test rules deploy/prometheus/rules/*_test.yml) and the Alertmanager configuration
	@command -v $(PROMTOOL) >/dev/null || { echo "promtool not found: apt-get install prometheus"; exit 1; }
	cd deploy/prometheus && $(PROMTOOL) check rules rules/slo.yml rules/alerts.yml
	cd deploy/prometheus/rules && $(PROMTOOL) test rules *_test.yml
	@if command -v $(AMTOOL) >/dev/null; then $(AMTOOL) check-config deploy/alertmanager/alertmanager.yml; \
	else echo "amtool not found (apt-get install prometheus-alertmanager): deploy/alertmanager/alertmanager.yml not checked"; fi

actionlint: ## Lint .github/workflows (installs actionlint, and shellcheck when apt is there)
	@command -v shellcheck >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		apt-get install -y -qq shellcheck >/dev/null 2>&1; } || echo "actionlint: shellcheck unavailable; run: scripts are not checked"
	@test -x "$(GOBIN_DIR)/actionlint" || GOWORK=off GOBIN="$(GOBIN_DIR)" go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	"$(GOBIN_DIR)/actionlint"
