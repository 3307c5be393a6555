# shellcheck shell=bash
# Shared by the test scripts and release/build.sh (source it): Debian packages installed on demand,
# and checked after their install step.
#   apt_install PKG...       apt-get install PKG... quietly (root, or sudo -n), bounded in time,
#                            waiting for another apt-get's lock, without starting the packages' own
#                            services (a policy-rc.d while it runs); returns non-zero when apt-get
#                            fails, its last lines on stderr.
#   apt_need PROBE=PKG...    what a step needs, each as a probe and the package that provides it: a
#                            command name (looked up on PATH) or an absolute path (a header, a
#                            library). Installs the packages of the missing probes in one apt_install,
#                            then probes again: anything still missing fails with one line on stderr,
#                            "missing after installing its package: PROBE (PKG), ...", instead of a
#                            build failing later on a missing header.
#   apt_has PROBE            whether a probe is present (a command on PATH, or an existing path).
apt_install() {
    local sudo=() policy=/usr/sbin/policy-rc.d added=0 rc=0 log
    [ "$(id -u)" = 0 ] || sudo=(sudo -n)
    log=$(mktemp)
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null && "${sudo[@]}" chmod 755 "$policy" && added=1
    fi
    { "${sudo[@]}" timeout 600 apt-get -o DPkg::Lock::Timeout=300 update -qq &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive timeout 900 apt-get -o DPkg::Lock::Timeout=300 \
            install -y -qq --no-install-recommends "$@"; } >"$log" 2>&1 || rc=1
    [ "$added" = 1 ] && "${sudo[@]}" rm -f "$policy"
    [ "$rc" = 0 ] || tail -n 20 "$log" >&2
    rm -f "$log"
    return "$rc"
}

apt_has() {
    case $1 in
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
    esac
}

apt_need() {
    local pair pkgs=() still=()
    for pair in "$@"; do
        apt_has "${pair%%=*}" && continue
        case " ${pkgs[*]} " in *" ${pair#*=} "*) ;; *) pkgs+=("${pair#*=}") ;; esac
    done
    if ((${#pkgs[@]})); then
        echo "installing ${pkgs[*]} (Debian packages)"
        apt_install "${pkgs[@]}" || { echo "apt-get install ${pkgs[*]} failed" >&2; return 1; }
    fi
    for pair in "$@"; do
        apt_has "${pair%%=*}" || still+=("${pair%%=*} (${pair#*=})")
    done
    if ((${#still[@]})); then
        local IFS=,
        echo "missing after installing its package:${still[*]/#/ }" >&2
        return 1
    fi
}
