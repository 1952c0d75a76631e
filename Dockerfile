# The services' images, from one Dockerfile with the repository root as context:
#
#   docker build --target geoip -t apistack/geoip:dev .
#   docker build --target chat -t apistack/chat:dev .
#
# docker-compose.yml builds both this way. The Go code is compiled once for both services,
# in stages that each change only when their inputs do:
#
#   modules  the go.mod/go.sum files          -> go mod download
#   deplist  the sources                      -> the packages the binaries import from
#                                                outside the repository (standard library too)
#   deps     that list                        -> all of them compiled into the Go build cache:
#                                                most of a cold build, redone only when an
#                                                import or a go.sum changes
#   build    the sources                      -> both binaries on the warm cache
#   geoip, chat                               -> one binary each on RUNTIME_IMAGE
#
# The second service's build finds every shared stage in Docker's layer cache, so a cold
# `docker compose up --build` compiles the dependencies once, and an edit to the code
# recompiles only the repository's own packages.
#
# Legacy builder and BuildKit alike (no RUN --mount, no COPY --chmod): docker-compose 1.29
# and a Docker CLI without buildx build with the legacy builder. The base images are
# arguments so that a machine without a registry can use the ones `make images-local`
# makes from Debian's packages (it writes them to .env, which compose reads).
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS modules
# Module mode, not the workspace: each service builds from its own go.mod, whose replace
# directive points at ../../libs/apiserver. -trimpath in GOFLAGS, so that every stage's
# compile has the same cache keys.
ENV CGO_ENABLED=0 GOWORK=off GOFLAGS=-trimpath
# A module mirror of your own, if the public proxy is out of reach.
ARG GOPROXY
COPY libs/apiserver/go.mod libs/apiserver/go.sum /src/libs/apiserver/
COPY services/geoip/go.mod services/geoip/go.sum /src/services/geoip/
COPY services/chat/go.mod services/chat/go.sum /src/services/chat/
RUN set -e; for m in services/geoip services/chat; do (cd "/src/$m" && go mod download); done

FROM modules AS deplist
COPY libs/apiserver/ /src/libs/apiserver/
COPY services/ /src/services/
# Everything outside the repository (no module, or a module that is neither the main one
# nor replaced by a directory), sorted: the file stays the same until an import changes,
# and then so does the next stage's cache key.
RUN set -e; mkdir /deps; for svc in geoip chat; do \
      (cd "/src/services/$svc" && \
       go list -deps -f '{{with .Module}}{{if and (not .Main) (not .Replace)}}{{$.ImportPath}}{{end}}{{else}}{{$.ImportPath}}{{end}}' "./cmd/$svc" | \
       sed '/^$/d' | sort >"/deps/$svc"); \
    done

FROM modules AS deps
COPY --from=deplist /deps/ /deps/
# go build of packages that are not main only fills the build cache, which is what the
# next stage starts from.
RUN set -e; for svc in geoip chat; do (cd "/src/services/$svc" && go build $(cat "/deps/$svc")); done

FROM deps AS build
COPY libs/apiserver/ /src/libs/apiserver/
COPY services/ /src/services/
ARG VERSION=dev
RUN set -e; for svc in geoip chat; do \
      (cd "/src/services/$svc" && go build -ldflags="-s -w -X main.version=${VERSION}" -o "/out/$svc" "./cmd/$svc"); \
    done

FROM ${RUNTIME_IMAGE} AS geoip
ARG RUNTIME_IMAGE
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="geoip" \
      org.opencontainers.image.description="IP geolocation HTTP API" \
      org.opencontainers.image.source="https://github.com/apistack/platform" \
      org.opencontainers.image.url="https://github.com/apistack/platform/tree/main/services/geoip" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${RUNTIME_IMAGE}"
COPY --from=build /out/geoip /geoip
# distroless's nonroot user; numeric so that it also works on scratch, which has no passwd.
USER 65532:65532
ENV HOST=0.0.0.0 PORT=3001
EXPOSE 3001
# The image has no shell: the binary checks its own /healthz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/geoip", "healthcheck"]
ENTRYPOINT ["/geoip"]
CMD ["serve"]

FROM ${RUNTIME_IMAGE} AS chat
ARG RUNTIME_IMAGE
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="chat" \
      org.opencontainers.image.description="Chat service: REST API, WebSocket delivery and a browser client" \
      org.opencontainers.image.source="https://github.com/apistack/platform" \
      org.opencontainers.image.url="https://github.com/apistack/platform/tree/main/services/chat" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${RUNTIME_IMAGE}"
COPY --from=build /out/chat /chat
USER 65532:65532
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/chat", "healthcheck"]
ENTRYPOINT ["/chat"]
CMD ["serve"]
