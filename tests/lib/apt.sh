# shellcheck shell=bash
# Shared by the test scripts (source it): Debian packages installed on demand.
#   apt_install PKG...   apt-get install PKG... quietly (root, or sudo -n), bounded in time, without
#                        starting the packages' own services (a policy-rc.d while it runs); returns
#                        non-zero when apt-get fails.
apt_install() {
    local sudo=() policy=/usr/sbin/policy-rc.d added=0 rc=0
    [ "$(id -u)" = 0 ] || sudo=(sudo -n)
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null && "${sudo[@]}" chmod 755 "$policy" && added=1
    fi
    "${sudo[@]}" timeout 300 apt-get update -qq &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends \
            "$@" >/dev/null || rc=1
    [ "$added" = 1 ] && "${sudo[@]}" rm -f "$policy"
    return "$rc"
}
