# shellcheck shell=bash
# The CompositeController as `kustomize build metacontroller/` prints it, calling a hook outside
# the cluster instead of the in-cluster Service; sourced by the bench scripts:
#
#   kustomize build metacontroller/ | local_hook_cc http://127.0.0.1:PORT [CUSTOMIZE_URL] >cc.yaml
#
# Each webhook's `service:` block is dropped and its `path:` becomes a `url:` under the given base
# (CUSTOMIZE_URL, when given, for the customize hook). Relies on kustomize's output order (keys
# sorted, so `protocol` closes the service block). Returns 1 when the result does not name exactly
# two URLs and no Service, so a changed manifest fails loudly instead of calling the cluster.
local_hook_cc() {
    local base=$1 customize=${2:-$1/customize} out
    out=$(sed -e '/^ *service:$/,/^ *protocol: https\{0,1\}$/d' \
        -e "s#^\( *\)path: /customize\$#\1url: $customize#" \
        -e "s#^\( *\)path: /sync\$#\1url: $base/sync#")
    if [[ $(grep -c '^ *url: ' <<<"$out") != 2 ]] || grep -q '^ *service:$' <<<"$out"; then
        echo "local_hook_cc: the CompositeController's webhooks are not two service references" >&2
        return 1
    fi
    printf '%s\n' "$out"
}
