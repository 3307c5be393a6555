# shellcheck shell=bash
# Shared by the scripts that bound their whole run (source it):
#   bound_run SECONDS "$@"        first thing in a script: runs the script again under timeout(1)
#                                 (TERM after SECONDS, KILL 30 s later, to its process group,
#                                 which holds only what the run started) and exits with its
#                                 status; inside that run it returns at once.
#   start_watchdog SECONDS WHAT   after SECONDS, print "WHAT reached; stopping" and send TERM to
#                                 this shell alone (its TERM trap then cleans up); sets
#                                 watchdog_pid, which the caller kills when it finishes first.
bound_run() {
  local limit="$1" script="${BASH_SOURCE[-1]}" guard
  shift
  guard="_BOUNDED_$(printf '%s' "${script}" | cksum | cut -d' ' -f1)"
  if [[ -z "${!guard:-}" ]]; then
    export "${guard}=1"
    exec timeout --kill-after=30 "${limit}" bash "${script}" "$@"
  fi
}

start_watchdog() {
  local limit="$1" what="$2" main_pid=$$
  (
    deadline=$((SECONDS + limit))
    while ((SECONDS < deadline)); do
      sleep 1
      kill -0 "${main_pid}" 2>/dev/null || exit 0
    done
    echo "${what} reached; stopping" >&2
    kill -TERM "${main_pid}"
  ) &
  watchdog_pid=$!
}
