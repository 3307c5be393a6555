#!/usr/bin/env bash
# Builds the images the e2e node's pods run, on this machine and without a registry: nothing is
# pulled. Each image is a scratch image holding files from Debian's packages (downloaded with
# `apt-get download` and unpacked with `dpkg-deb -x`; nothing is installed) or compiled here,
# committed with buildah (vfs driver, its own throw-away storage) and written as a
# docker-archive that `ctr images import` loads into the node's containerd:
#
#   pause      localhost/e2e-pause:1          a static C program (pause_main below): the sandbox
#                                             process of every pod
#   memcached  localhost/memcached:<version>  memcached 1.6.45 built from the release tarball in
#                                             ../shared/memcached beside the clone
#                                             (tests/lib/shared-memcached.sh: the default image's
#                                             version, its proxy included), or without that folder
#                                             Debian's memcached (the proxy scenario then skips);
#                                             the libraries ldd lists (taken from Debian's
#                                             packages; the proxy needs no other), /etc/passwd
#                                             with memcache (11211) and nobody, busybox's sleep
#                                             (the preStop hook); the entrypoint is memcached
#                                             itself, user 11211
#   client     localhost/e2e-client:1         busybox (static: sh, nc, nslookup, wget), openssl and
#                                             getent (glibc's resolver, as a client's) with their
#                                             libraries: what the tests run in a client pod
#
# Usage: node-images.sh OUT_DIR
#   Writes OUT_DIR/<name>.tar and OUT_DIR/<name>.ref (the image reference) for each image.
#   Archives are cached in $NODE_IMAGE_CACHE (default $HOME/.cache/memcached-hook/node-images),
#   keyed by this script's content and the Debian package versions (and the built memcached's
#   sha256): a warm run copies them.
# Environment: SHARED_MEMCACHED_DIR  the folder of memcached's release tarball (default
#   ../shared/memcached beside the clone)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: node-images.sh OUT_DIR}"
cache="${NODE_IMAGE_CACHE:-${HOME}/.cache/memcached-hook/node-images}"
log() { printf '[node-images] %s\n' "$*" >&2; }

mkdir -p "${out}" "${cache}"
work="$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-node-images.XXXXXX")"
store=(--root "${work}/storage" --runroot "${work}/run" --storage-driver vfs)
cleanup() {
  buildah "${store[@]}" rm --all >/dev/null 2>&1 || true
  rm -rf "${work}"
}
trap cleanup EXIT

# The packages each image takes files from (MEMCACHED_DEBS less memcached beside a built one).
MEMCACHED_LIBS=(libevent-2.1-7 libsasl2-2 libssl3 busybox-static)
MEMCACHED_DEBS=(memcached "${MEMCACHED_LIBS[@]}")
CLIENT_DEBS=(busybox-static openssl libssl3 libc-bin)

pkg_version() { apt-cache show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1; }

# key NAME PKG...: cache key of an image: this script, the built memcached (if any) and the
# candidate versions of its packages.
key() {
  local name="$1" p
  shift
  {
    cat "${BASH_SOURCE[0]}"
    [[ "${name}" == memcached && -n "${built_memcached}" ]] && sha256sum <"${built_memcached}"
    for p in "$@"; do printf '%s=%s\n' "${p}" "$(pkg_version "${p}")"; done
  } | sha256sum | cut -c1-16
}

# unpack DIR PKG...: download the packages and unpack them into DIR (nothing is installed).
unpack() {
  local dir="$1" deb
  shift
  mkdir -p "${work}/debs" "${dir}"
  (cd "${work}/debs" && apt-get download -qq "$@" >/dev/null 2>"${work}/apt.log") \
    || { cat "${work}/apt.log" >&2; return 1; }
  for deb in "${work}"/debs/*.deb; do dpkg-deb -x "${deb}" "${dir}"; done
  rm -f "${work}"/debs/*.deb
}

# with_libs ROOT STAGE BIN...: copy BINs (paths inside STAGE) into ROOT with every library ldd
# lists, resolved first from STAGE's library directories, then from the host's.
# (0755: the kernel opens the dynamic loader for execution)
with_libs() {
  local root="$1" stage="$2" bin lib dst
  shift 2
  local libpath="${stage}/usr/lib/x86_64-linux-gnu:${stage}/lib/x86_64-linux-gnu"
  for bin in "$@"; do
    install -D -m 0755 "${stage}${bin}" "${root}${bin}"
    while read -r lib; do
      dst="${lib#"${stage}"}"
      [[ -e "${root}${dst}" ]] || install -D -m 0755 "$(readlink -f "${lib}")" "${root}${dst}"
    done < <(LD_LIBRARY_PATH="${libpath}" ldd "${stage}${bin}" | grep -o '/[^ ]*' | sort -u)
  done
}

# commit NAME REF ROOTFS USER ENTRYPOINT_JSON: scratch + ROOTFS, written to $out/NAME.tar.
commit() {
  local name="$1" ref="$2" rootfs="$3" user="$4" entry="$5" ctr
  ctr="$(buildah "${store[@]}" from --quiet scratch)"
  buildah "${store[@]}" copy --quiet "${ctr}" "${rootfs}" / >/dev/null
  buildah "${store[@]}" config --user "${user}" --entrypoint "${entry}" --cmd '' --env PATH=/usr/bin:/bin \
    --os linux --arch amd64 "${ctr}"
  buildah "${store[@]}" commit --quiet --rm "${ctr}" "${ref}" >/dev/null
  rm -f "${work}/${name}.tar"
  buildah "${store[@]}" push --quiet "${ref}" "docker-archive:${work}/${name}.tar:${ref}"
}

# image NAME REF KEY BUILDER: the cached archive, or BUILDER REF ROOTFS then commit.
image() {
  local name="$1" ref="$2" k="$3" builder="$4" start=${SECONDS}
  local cached="${cache}/${name}-${k}.tar"
  if [[ ! -f "${cached}" ]]; then
    log "building ${ref} ..."
    local rootfs="${work}/rootfs-${name}"
    mkdir -p "${rootfs}"
    "${builder}" "${rootfs}"
    "${builder}_commit" "${ref}" "${rootfs}"
    mv -f "${work}/${name}.tar" "${cached}.tmp" && mv -f "${cached}.tmp" "${cached}"
    log "built ${ref} in $((SECONDS - start))s ($(du -h "${cached}" | cut -f1))"
  else
    log "cached: ${ref} (${cached})"
  fi
  cp -f "${cached}" "${out}/${name}.tar"
  printf '%s\n' "${ref}" >"${out}/${name}.ref"
}

pause_main() {
  local rootfs="$1"
  cat >"${work}/pause.c" <<'EOF'
/* The sandbox process of a pod: sleeps until told to stop, reaps any orphan. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, 0, WNOHANG) > 0) {} }

int main(void) {
  signal(SIGTERM, stop);
  signal(SIGINT, stop);
  signal(SIGCHLD, reap);
  for (;;) pause();
}
EOF
  gcc -static -O2 -s -o "${rootfs}/pause" "${work}/pause.c"
}
pause_main_commit() { commit pause "$1" "$2" 65535:65535 '["/pause"]'; }

memcached_root() {
  local rootfs="$1" stage="${work}/stage-memcached"
  if [[ -n "${built_memcached}" ]]; then
    unpack "${stage}" "${MEMCACHED_LIBS[@]}"
    install -D -m 0755 "${built_memcached}" "${stage}/usr/bin/memcached"
  else
    unpack "${stage}" "${MEMCACHED_DEBS[@]}"
  fi
  with_libs "${rootfs}" "${stage}" /usr/bin/memcached
  # `sleep`, as in the memcached images of Docker Hub: the hook's preStop hook runs it.
  install -D -m 0755 "${stage}/bin/busybox" "${rootfs}/bin/busybox"
  ln -sf busybox "${rootfs}/bin/sleep"
  mkdir -p "${rootfs}/etc" "${rootfs}/tmp"
  chmod 1777 "${rootfs}/tmp"
  printf 'root:x:0:0:root:/:/nonexistent\nmemcache:x:11211:11211:memcache:/:/nonexistent\nnobody:x:65534:65534:nobody:/:/nonexistent\n' \
    >"${rootfs}/etc/passwd"
  printf 'root:x:0:\nmemcache:x:11211:\nnogroup:x:65534:\n' >"${rootfs}/etc/group"
}
memcached_root_commit() { commit memcached "$1" "$2" 11211:11211 '["/usr/bin/memcached"]'; }

client_root() {
  local rootfs="$1" stage="${work}/stage-client" t
  unpack "${stage}" "${CLIENT_DEBS[@]}"
  with_libs "${rootfs}" "${stage}" /usr/bin/openssl /usr/bin/getent
  install -D -m 0755 "${stage}/bin/busybox" "${rootfs}/bin/busybox"
  for t in sh nc nslookup wget sleep cat printf grep sed head tail tr wc ls timeout echo hostname id env; do
    ln -sf busybox "${rootfs}/bin/${t}"
  done
  mkdir -p "${rootfs}/etc" "${rootfs}/tmp"
  chmod 1777 "${rootfs}/tmp"
  printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/nonexistent\n' >"${rootfs}/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"${rootfs}/etc/group"
}
client_root_commit() {
  commit client "$1" "$2" 65534:65534 '["/bin/sh", "-c", "trap \"exit 0\" TERM; while :; do sleep 1; done"]'
}

command -v buildah >/dev/null || { log "buildah is missing (apt-get install buildah)"; exit 1; }
# memcached built from the shared release tarball when it is there (one line when it is not).
# shellcheck source=../lib/apt.sh
source "${here}/../lib/apt.sh"
# shellcheck source=../lib/shared-memcached.sh
source "${here}/../lib/shared-memcached.sh"
shared_memcached "${SHARED_MEMCACHED_DIR:-${here}/../../../shared/memcached}" >"${work}/shared-memcached.log" \
  || exit 1
log "$(cat "${work}/shared-memcached.log")"
built_memcached="${SHARED_MEMCACHED_BIN}"
if [[ -n "${built_memcached}" ]]; then
  mc_version="$("${built_memcached}" --version | sed -n 's/^memcached //p')"
  mc_debs=("${MEMCACHED_LIBS[@]}")
else
  mc_version="$(pkg_version memcached)"
  [[ -n "${mc_version}" ]] || { log "apt-cache knows no memcached package (run apt-get update)"; exit 1; }
  mc_debs=("${MEMCACHED_DEBS[@]}")
fi
image pause localhost/e2e-pause:1 "$(key pause gcc libc6-dev)" pause_main
image memcached "localhost/memcached:${mc_version%%-*}" "$(key memcached "${mc_debs[@]}")" memcached_root
image client localhost/e2e-client:1 "$(key client "${CLIENT_DEBS[@]}")" client_root
