# Pinned versions of the Go-built test tools (helm, promtool) and where they are cached.
# Sourced by tests/tools/build-go-tool.sh and the suites that use the tools; override any of
# these from the environment. Changing a version builds a fresh binary next to the old one.

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
# Prometheus tags its Go module v0.<major*100+minor>.<patch>: v0.316.0 is Prometheus 3.16.0.
PROMETHEUS_MODULE_VERSION="${PROMETHEUS_MODULE_VERSION:-v0.316.0}"

# Outside the clone, so that it survives a fresh clone (CI); never depended on.
TOOLS_BIN_CACHE="${TOOLS_BIN_CACHE:-${HOME}/.cache/memcached-hook/bin}"

HELM_BIN="${HELM_BIN:-${TOOLS_BIN_CACHE}/helm-${HELM_VERSION}/helm}"
PROMTOOL_BIN="${PROMTOOL_BIN:-${TOOLS_BIN_CACHE}/promtool-${PROMETHEUS_MODULE_VERSION}/promtool}"

# The Prometheus Operator module whose CRDs (ServiceMonitor, PrometheusRule) validate the chart;
# the same pin as tests/e2e/fetch-servicemonitor-crd.sh.
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-$(sed -n 's/^PROMETHEUS_OPERATOR_VERSION="\${PROMETHEUS_OPERATOR_VERSION:-\(.*\)}"$/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../e2e/fetch-servicemonitor-crd.sh")}"
