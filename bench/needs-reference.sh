# shellcheck shell=bash
# The preamble of bench/scale.sh with SYSTEM=reference: exits 0 with one "skip:" line when the
# reference operator (a manager binary built by hand outside the repository, of the operator
# whose CRD the hook serves, group memcached.c5c3.io) and the directory of its CRD manifests are
# not supplied.
REFERENCE_OPERATOR_BIN=${REFERENCE_OPERATOR_BIN:-}
REFERENCE_CRDS_DIR=${REFERENCE_CRDS_DIR:-}
if ! [[ -n "$REFERENCE_OPERATOR_BIN" && -x "$REFERENCE_OPERATOR_BIN" && -n "$REFERENCE_CRDS_DIR" ]] \
    || ! compgen -G "$REFERENCE_CRDS_DIR/*.yaml" >/dev/null; then
    echo "skip: no reference operator (REFERENCE_OPERATOR_BIN=${REFERENCE_OPERATOR_BIN:-<unset>}, REFERENCE_CRDS_DIR=${REFERENCE_CRDS_DIR:-<unset>})"
    exit 0
fi
