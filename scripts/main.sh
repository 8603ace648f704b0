#!/usr/bin/env bash
# The main job: build (Release) and run the default experiment on emulated NVM.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh" "$root/build" -DCMAKE_BUILD_TYPE=Release
exec bash "$root/scripts/experiments/default.sh" "$@"
