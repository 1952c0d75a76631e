# A builder image with every module's dependencies downloaded and compiled: the Go build
# cache of the whole repository, for the compose test to pass as GO_IMAGE to both service
# builds. The services' Dockerfiles run unchanged on it; their `go mod download` finds the
# modules present and `go build` reuses the compiled packages (Go's cache is keyed by
# content, so a stale entry is never used), which roughly halves building two images from
# cold. Nothing from it reaches a final image. Build context: the repository root.
ARG GO_IMAGE=golang:1.26-bookworm
FROM ${GO_IMAGE}
LABEL io.apistack.gocache=true
ENV CGO_ENABLED=0 GOWORK=off
ARG GOPROXY
COPY libs/ /src/libs/
COPY services/ /src/services/
# The same flags as the services' Dockerfiles, so that the cache entries match.
RUN set -e; \
    for mod in /src/libs/apiserver /src/services/*/; do \
      [ -f "$mod/go.mod" ] || continue; \
      cd "$mod"; go mod download; go build -trimpath ./... || echo "gocache: $mod does not build; its cache is partial"; \
    done; \
    rm -rf /src
