#!/usr/bin/env bash
# The default experiment: YCSB-RO on every architecture, a data size that needs NVM.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bench="$root/build/workloads/tristore-bench"
"$bench" "$@"
