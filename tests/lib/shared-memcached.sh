# shellcheck shell=bash
# memcached built from the release tarball in a folder beside the clone, proxy included, for the
# checks that run the real proxy in front of real backends.
#
#   source tests/lib/apt.sh tests/lib/shared-memcached.sh
#   shared_memcached DIR || exit 1
#
# DIR holds memcached-VERSION.tar.gz and a README.md naming its sha256 ("sha256 of the tarball:
# `HEX`"). The tarball's sha256 is compared with the README's, then it is built once with the flags
# of the official image (extstore, proxy, SASL, TLS) into a cache outside the clone keyed by version
# and hash, $HOME/.cache/memcached-hook/memcached-VERSION-SHA12/, and reused from there afterwards.
# Exports SHARED_MEMCACHED_BIN. Returns 0 with SHARED_MEMCACHED_BIN empty and one line on stdout
# when DIR does not exist (a user's clone: the callers then skip); returns 1 with one line on stderr
# when DIR is there but broken or the build fails.

shared_memcached() {
    local dir=$1 tarball want got version cache work log
    export SHARED_MEMCACHED_BIN=
    if [[ ! -d "$dir" ]]; then
        echo "memcached: no $dir beside the clone; the real-proxy checks will be skipped"
        return 0
    fi
    dir=$(cd "$dir" && pwd)
    tarball=$(compgen -G "$dir/memcached-*.tar.gz" | head -n 1) || true
    if [[ -z "$tarball" || ! -f "$dir/README.md" ]]; then
        echo "FAIL memcached: $dir lacks memcached-*.tar.gz or README.md" >&2
        return 1
    fi
    # shellcheck disable=SC2016 # backquotes, literally
    want=$(sed -n 's/^sha256 of the tarball: `\([0-9a-f]\{64\}\)`.*/\1/p' "$dir/README.md" | head -n 1)
    if [[ -z "$want" ]]; then
        echo "FAIL memcached: $dir/README.md names no 'sha256 of the tarball: \`HEX\`'" >&2
        return 1
    fi
    got=$(sha256sum "$tarball" | cut -d' ' -f1)
    if [[ "$got" != "$want" ]]; then
        echo "FAIL memcached: sha256 of $tarball is $got, $dir/README.md says $want" >&2
        return 1
    fi
    version=$(basename "$tarball" .tar.gz)
    cache="$HOME/.cache/memcached-hook/$version-${got:0:12}"
    if [[ -x "$cache/memcached" ]]; then
        export SHARED_MEMCACHED_BIN="$cache/memcached"
        echo "memcached: $("$SHARED_MEMCACHED_BIN" --version) from $cache (built before)"
        return 0
    fi
    apt_need gcc=gcc make=make pkg-config=pkg-config \
        /usr/include/event2/event.h=libevent-dev \
        /usr/include/openssl/ssl.h=libssl-dev \
        /usr/include/sasl/sasl.h=libsasl2-dev || return 1
    work=$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-memcached.XXXXXX")
    log="$work/build.log"
    echo "memcached: building $version (about a minute)"
    if ! { tar -xzf "$tarball" -C "$work" &&
        cd "$work/$version" &&
        ./configure --enable-extstore --enable-proxy --enable-sasl --enable-sasl-pwdb --enable-tls &&
        make -j2; } >"$log" 2>&1; then
        echo "FAIL memcached: building $version: $(tail -n 5 "$log" | tr '\n' ' ' | head -c 600) (log in $log)" >&2
        cd - >/dev/null || true
        return 1
    fi
    cd - >/dev/null || true
    mkdir -p "$cache.tmp"
    cp "$work/$version/memcached" "$cache.tmp/memcached"
    rm -rf "$cache" && mv "$cache.tmp" "$cache"
    rm -rf "$work"
    export SHARED_MEMCACHED_BIN="$cache/memcached"
    echo "memcached: $("$SHARED_MEMCACHED_BIN" --version) built into $cache"
}
