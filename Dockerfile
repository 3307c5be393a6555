# syntax=docker/dockerfile:1
#
# memcached-hook container image: one static binary on an empty base, run as a numeric non-root user.
#
#   docker build -t registry.example.com/memcached-hook:0.1.0 .
#
# (registry.example.com is a placeholder: tag and push to your own registry; README.md, "Build
# and push the image".) Needs BuildKit, the default builder of current Docker, for the cache
# mounts. This build's image is linux/amd64: the Rust target is named explicitly below
# (release/build.sh publishes linux/amd64 and linux/arm64 under one tag). Without Docker,
# tests/image/build.sh builds the same image with buildah from the same binary (and reads the
# labels below from this file).
#
# The cargo command in the builder stage is the one tests/manifests/static-build.sh runs in CI
# (it reads it from this file), so the binary this image copies is the one CI builds and checks
# for being static.

FROM rust:1.95-bookworm AS builder
WORKDIR /src
# Only what cargo needs to build (.dockerignore is an allow-list: Cargo.toml, Cargo.lock, src/,
# and the target directories Cargo.toml may declare).
COPY . .
# Dependency caching: the crates.io registry and the target directory live in BuildKit cache
# mounts, so a rebuild after a source change recompiles only this crate, not its ~200 deps.
# Static binary without a new rustup target: glibc with crt-static. --target is explicit so that
# RUSTFLAGS apply to the binary only, not to build scripts and proc-macros. --locked builds
# exactly the committed Cargo.lock.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked --target x86_64-unknown-linux-gnu \
    && install -D -m 0755 target/x86_64-unknown-linux-gnu/release/memcached-hook /out/memcached-hook

# An empty base: the binary is static and reads no file of the image (no libc, no /etc/passwd, no
# CA certificates, no time zones; tests/manifests/static-build.sh runs it in an empty chroot).
# USER is numeric so that Kubernetes' runAsNonRoot check can verify it without a passwd file.
FROM scratch

ARG VERSION=0.1.0
# Where the source and the install guide live: placeholders here, set them to your repository's
# (`--build-arg SOURCE_URL=https://...`). release/build.sh sets both from its PROJECT_URL and fails
# if the placeholder is left in the image.
ARG SOURCE_URL=https://git.example.com/memcached-hook
ARG DOCUMENTATION_URL=https://git.example.com/memcached-hook/docs/install.md
LABEL org.opencontainers.image.title="memcached-hook" \
      org.opencontainers.image.description="Metacontroller CompositeController sync hook that runs Memcached on Kubernetes (memcached.c5c3.io)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.documentation="${DOCUMENTATION_URL}"

COPY --from=builder /out/memcached-hook /memcached-hook

USER 65532:65532
# glibc's allocator keeps up to 256 freed blocks of each size per thread instead of 7: a sync
# frees its ~230 small allocations together, and with 7 most of them went back through the
# arena (and `malloc_consolidate`) only to be taken out again by the next request. Measured in
# BENCHMARKS.md: -10 % user-space instructions per 200 in the server,
# -13 % CPU per request, peak RSS +0.5-0.8 MB under load. Overridable like any variable (an empty value restores glibc's defaults).
ENV GLIBC_TUNABLES=glibc.malloc.tcache_count=256
# memcached-hook serve listens on 0.0.0.0:8080 (POST /sync, POST /customize, GET /healthz,
# GET /readyz, GET /metrics).
EXPOSE 8080
ENTRYPOINT ["/memcached-hook", "serve"]
