#!/usr/bin/env bash
# build.sh DIR [cmake options...]: configures and builds tristore into DIR.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: build.sh DIR [cmake options]}
shift
bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$dir" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
