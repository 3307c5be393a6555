# shellcheck shell=bash
# Shared by the scripts that run the hook as the image does (source it, from any directory):
# sets IMAGE_ENV_VARS to the Dockerfile's ENV lines (KEY=VALUE, for `env "${IMAGE_ENV_VARS[@]}"`
# in front of a command), or to nothing when the caller's IMAGE_ENV is 0.
IMAGE_ENV_VARS=()
if [[ "${IMAGE_ENV:-1}" == 1 ]]; then
    _image_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    while IFS= read -r _line; do IMAGE_ENV_VARS+=("$_line"); done \
        < <(python3 "$_image_root/tests/image/image.py" env --dockerfile "$_image_root/Dockerfile")
    unset _image_root _line
fi
