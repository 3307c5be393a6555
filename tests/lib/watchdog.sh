# shellcheck shell=bash
# Shared by the scripts that bound their whole run (source it):
#   start_watchdog SECONDS WHAT   after SECONDS, print "WHAT reached; stopping" and send TERM to
#                                 this shell alone (its TERM trap then cleans up); sets
#                                 watchdog_pid, which the caller kills when it finishes first.
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
