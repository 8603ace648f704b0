#!/usr/bin/env bash
# dax-setup.sh: an emulated persistent-memory namespace the classic way, and a check that
# tristore sees it as persistent memory (pmem_is_pmem true). Run as root on a machine you may
# reboot; CI does not run it.
#
#   bash scripts/dax-setup.sh grub [SIZE!OFFSET]   step 1: reserve DRAM as pmem (default 4G!12G),
#                                                 then reboot
#   bash scripts/dax-setup.sh mount [DEVICE] [DIR] step 2: mkfs.ext4 DEVICE (default /dev/pmem0),
#                                                 mount it -o dax on DIR (default /mnt/pmem),
#                                                 then run the check
#   bash scripts/dax-setup.sh check [DIR]          the check alone
#
# Step 1 adds memmap=SIZE!OFFSET to GRUB_CMDLINE_LINUX in /etc/default/grub: the kernel then
# treats SIZE of DRAM at physical address OFFSET as persistent memory and shows it as
# /dev/pmem0. Pick an OFFSET inside usable RAM (dmesg | grep BIOS-e820); the memory is gone
# for everything else. Real PMem (ndctl create-namespace --mode fsdax) needs only step 2.
# Step 2 erases DEVICE. The check runs build/workloads/tristore-bench (bash scripts/build.sh build)
# with its NVM file in DIR and fails unless the JSON result says nvm_is_pmem true and
# nvm_persistence "pmem". PMEM_IS_PMEM_FORCE must not be set: it overrides libpmem's detection.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
step=${1:-}

require_root() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "error: run as root" >&2
    exit 1
  fi
}

check() {
  local dir=$1 bench=${TRISTORE_BENCH:-$root/build/workloads/tristore-bench}
  if [[ -n ${PMEM_IS_PMEM_FORCE:-} ]]; then
    echo "error: PMEM_IS_PMEM_FORCE is set; unset it, it overrides libpmem's detection" >&2
    exit 1
  fi
  if ! findmnt -no OPTIONS --target "$dir" | tr ',' '\n' | grep -qx dax; then
    echo "error: $dir is not on a file system mounted with -o dax (findmnt --target $dir)" >&2
    exit 1
  fi
  [[ -x $bench ]] || { echo "error: build first: bash scripts/build.sh build" >&2; exit 1; }
  local json
  json=$(mktemp)
  "$bench" --arch nvm-direct --workload ycsb-ro --records 1000 --nvm 64MiB \
    --nvm-path "$dir/tristore-dax-check.nvm" --replace-files --seconds 1 --warmup 0 --quiet --json "$json"
  rm -f "$dir/tristore-dax-check.nvm"
  python3 - "$json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
print(f"nvm_is_pmem {result['nvm_is_pmem']}, nvm_persistence {result['nvm_persistence']}")
sys.exit(0 if result["nvm_is_pmem"] and result["nvm_persistence"] == "pmem" else 1)
PY
  rm -f "$json"
  echo "ok: $dir is DAX and pmem_is_pmem holds; use --nvm-path $dir/FILE"
}

case $step in
  grub)
    require_root
    region=${2:-4G!12G}
    grep -q "memmap=" /etc/default/grub && { echo "memmap= is already set in /etc/default/grub"; exit 0; }
    sed -i "s/^GRUB_CMDLINE_LINUX=\"/GRUB_CMDLINE_LINUX=\"memmap=${region} /" /etc/default/grub
    update-grub
    echo "added memmap=${region}; reboot, then: bash scripts/dax-setup.sh mount"
    ;;
  mount)
    require_root
    device=${2:-/dev/pmem0}
    dir=${3:-/mnt/pmem}
    [[ -b $device ]] || { echo "error: no $device (step 1, then reboot; cat /proc/cmdline)" >&2; exit 1; }
    mkfs.ext4 -F -q "$device"
    mkdir -p "$dir"
    mount -o dax "$device" "$dir"
    check "$dir"
    ;;
  check)
    check "${2:-/mnt/pmem}"
    ;;
  *)
    sed -n '2,20p' "$0"
    exit 2
    ;;
esac
