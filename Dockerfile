# The services' images, from one Dockerfile with the repository root as context:
#
#   docker build --target geoip -t apistack/geoip:dev .
#   docker build --target chat -t apistack/chat:dev .
#
# docker-compose.yml builds both this way. The Go code is compiled once for both services,
# in stages that each change only when their inputs do:
#
#   go       the Go image and the build settings, shared by the stages below
#   deplist  the sources                      -> the packages the binaries import from
#                                                outside the repository (standard library
#                                                too), the go.mod/go.sum files, and the
#                                                zips of only the modules those come from
#   deps     that                             -> every one of those packages compiled into
#                                                the Go build cache: most of a cold build,
#                                                redone only when an import, a go.mod or a
#                                                go.sum changes
#   build    the sources                      -> both binaries on the warm cache
#   geoip, chat                               -> one binary each on RUNTIME_IMAGE
#
# The second service's build finds every shared stage in Docker's layer cache, so a cold
# `docker compose up --build` compiles the dependencies once, and an edit to the code
# recompiles only the repository's own packages (`go build -v` in the build stage lists them).
#
# Few steps, and no extracted module tree left in any layer: the legacy builder commits a
# container after every instruction, and with a storage driver that diffs by walking the
# whole file system (fuse-overlayfs, vfs) each step costs in proportion to the files in the
# image. Modules are fetched as zips for the packages built (`go list`), not the whole graph
# (`go mod download` would also fetch test-only modules and the `tool` directives' modules),
# and each stage unpacks what it compiles from and deletes it again.
#
# Legacy builder and BuildKit alike (no RUN --mount, no COPY --chmod): docker-compose 1.29
# and a Docker CLI without buildx build with the legacy builder. The base images are
# arguments so that a machine without a registry can use the ones `make images-local`
# makes from Debian's packages (it writes them to .env, which compose reads).
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS go
# A module mirror of your own, if the public proxy is out of reach (empty: Go's default).
ARG GOPROXY
# Module mode, not the workspace: each service builds from its own go.mod, whose replace
# directive points at ../../libs/apiserver. The same flags in every stage, so that the
# build stage finds the deps stage's compiles in the cache (-trimpath also keeps the
# directory out of the cache keys). nomsgpack: gin without its MessagePack codec, which
# nothing here uses and which is the largest package to compile (ugorji/go/codec).
# -modcacherw: the unpacked modules can be deleted without a chmod pass.
ENV CGO_ENABLED=0 GOWORK=off GOFLAGS="-trimpath -tags=nomsgpack -modcacherw" \
    GOMODCACHE=/deps/mod GOPROXY=${GOPROXY}

FROM go AS deplist
COPY . /src/
# Everything outside the repository (no module, or a module that is neither the main one
# nor replaced by a directory), sorted: the files stay the same until an import or a
# go.mod/go.sum changes, and then so does the next stage's cache key. Only the module
# cache's zips, .mod and .info files are kept (the unpacked tree is deleted: the deps
# stage unpacks it again from them, without the network).
RUN set -e; mkdir -p /deps/src; for svc in geoip chat; do \
      (cd "/src/services/$svc" && \
       go list -deps -f '{{with .Module}}{{if and (not .Main) (not .Replace)}}{{$.ImportPath}}{{end}}{{else}}{{$.ImportPath}}{{end}}' "./cmd/$svc" >/tmp/list && \
       sed '/^$/d' /tmp/list | sort >"/deps/$svc.packages"); \
    done; \
    cd /src && find libs services -name go.mod -o -name go.sum | tar -cf - -T - | tar -xf - -C /deps/src; \
    find /deps/mod -mindepth 1 -maxdepth 1 ! -name cache -exec rm -rf {} +; \
    rm -rf /deps/mod/cache/vcs

FROM go AS deps
COPY --from=deplist /deps/ /deps/
# go build of packages that are not main only fills the build cache, which is what the
# next stage starts from. GOPROXY=off: every module it needs is in the zips.
RUN set -e; for svc in geoip chat; do \
      (cd "/deps/src/services/$svc" && GOPROXY=off go build $(cat "/deps/$svc.packages")); \
    done; \
    find /deps/mod -mindepth 1 -maxdepth 1 ! -name cache -exec rm -rf {} +

FROM deps AS build
COPY . /src/
ARG VERSION=dev
RUN set -e; for svc in geoip chat; do \
      (cd "/src/services/$svc" && \
       GOPROXY=off go build -v -ldflags="-s -w -X main.version=${VERSION}" -o "/out/$svc" "./cmd/$svc"); \
    done; \
    find /deps/mod -mindepth 1 -maxdepth 1 ! -name cache -exec rm -rf {} +

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
