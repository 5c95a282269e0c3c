#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# usage: leak-check.sh SIMULATOR [CYCLES]
#
# Runs the simulator in the foreground under valgrind (memcheck, full leak
# check) with mtty.conf, nvidia-sriov-disabled.conf and nvidia-modes.conf,
# drives CYCLES (default 10000) create/remove cycles plus every fault, SR-IOV
# enable and disable, unregister/register (one delayed registration still
# pending at unmount), counters, NVIDIA's mixed-size and MIG modes with their
# GPU instances, refusals and reboots, then unmounts. Exits non-zero if valgrind reports an
# error or a leak, or if the simulator did not exit cleanly.
# With VALGRIND=none the simulator runs bare (use that with an ASan build:
# LeakSanitizer reports at exit).
set -euo pipefail

sim=$1
cycles=${2:-10000}
if [ "${VALGRIND:-}" != none ] && ! command -v valgrind > /dev/null; then
        echo "leak-check: valgrind is not installed" >&2
        exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../pid.bash
source "$here/../pid.bash"
work=$(mktemp -d)
trap 'fusermount3 -uz "$work/m" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir "$work/m"

run_sim() { # TOPOLOGY LOG
        if [ "${VALGRIND:-}" = none ]; then
                "$sim" -f "$1" "$work/m" 2>"$2" &
        else
                valgrind --quiet --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all \
                        --error-exitcode=99 "$sim" -f "$1" "$work/m" 2>"$2" &
        fi
        pid=$!
        for _ in $(seq 600); do
                [ -e "$work/m/.sim/ctl" ] && return 0
                sleep 0.1
        done
        echo "leak-check: the simulator did not come up" >&2
        cat "$2" >&2
        return 1
}

stop_sim() { # LOG
        local rc=0
        for _ in $(seq 100); do fusermount3 -u "$work/m" 2>/dev/null && break; sleep 0.1; done
        # a copy of the mount in another mount namespace keeps it serving:
        # end it with SIGTERM, which takes the same clean exit path
        for _ in $(seq 50); do pid_running "$pid" || break; sleep 0.1; done
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" || rc=$?
        # after SIGTERM libfuse tries to unmount again and says it failed
        if [ "$rc" -ne 0 ] || grep -v '^fuse: failed to unmount' "$1" | grep -q .; then
                echo "leak-check: exit status $rc; report:" >&2
                cat "$1" >&2
                return 1
        fi
}

m=$work/m
u=11111111-2222-4333-8444-555555555555

echo "leak-check: mtty.conf, $cycles create/remove cycles"
run_sim "$here/topologies/mtty.conf" "$work/log1"
c=$m/class/mdev_bus/mtty/mdev_supported_types
for ((i = 0; i < cycles; i++)); do
        printf '%s\n' "$u" > "$c/mtty-$((i % 2 + 1))/create"
        cat "$c/mtty-1/available_instances" > /dev/null
        printf '1\n' > "$m/bus/mdev/devices/$u/remove"
done
# faults, errors, counters, unregister with mdevs held, a pending timer
printf 'create-fail EIO parent=mtty count=1\n' > "$m/.sim/ctl"
printf '%s\n' "$u" > "$c/mtty-1/create" 2>/dev/null && exit 1
printf 'not-a-uuid\n' > "$c/mtty-1/create" 2>/dev/null && exit 1
printf '%s\n' "$u" > "$c/mtty-1/create"
printf '%s\n' "$u" > "$c/mtty-2/create" 2>/dev/null && exit 1
printf 'remove-busy 1 uuid=%s\n' "$u" > "$m/.sim/ctl"
printf '1\n' > "$m/bus/mdev/devices/$u/remove" 2>/dev/null && exit 1
printf 'remove-block 100\n' > "$m/.sim/ctl"
printf '1\n' > "$m/bus/mdev/devices/$u/remove"
printf 'faults-reset\n' > "$m/.sim/ctl"
for i in 1 2 3; do printf '11111111-2222-4333-8444-00000000000%d\n' "$i" > "$c/mtty-2/create"; done
cat "$m/.sim/counters" "$m/.sim/state" > /dev/null
printf 'counters-reset\n' > "$m/.sim/ctl"
printf 'unregister mtty\n' > "$m/.sim/ctl"
printf 'register mtty\n' > "$m/.sim/ctl"
printf '%s\n' "$u" > "$c/mtty-1/create"
printf 'unregister mtty\nregister mtty after=100\n' > "$m/.sim/ctl"
# The simulator runs under valgrind: wait for the delayed register, not a
# fixed second.
for i in $(seq 600); do
        [ -e "$c/mtty-1/create" ] && break
        sleep 0.05
done
printf '%s\n' "$u" > "$c/mtty-1/create"
printf 'unregister mtty\nregister mtty after=600000\n' > "$m/.sim/ctl"
stop_sim "$work/log1"

echo "leak-check: nvidia-sriov-disabled.conf, enable/disable VFs"
run_sim "$here/topologies/nvidia-sriov-disabled.conf" "$work/log2"
pf=$m/bus/pci/devices/0000:3b:00.0
for i in $(seq 20); do
        printf '16\n' > "$pf/sriov_numvfs"
        printf '%s\n' "$u" > "$m/class/mdev_bus/0000:3b:00.4/mdev_supported_types/nvidia-471/create"
        printf '0\n' > "$pf/sriov_numvfs"
done
printf '4\n' > "$pf/sriov_numvfs"
printf '%s\n' "$u" > "$m/class/mdev_bus/0000:3b:00.5/mdev_supported_types/nvidia-472/create"
stop_sim "$work/log2"

echo "leak-check: nvidia-modes.conf, mixed-size and MIG modes, GPU instances, reboots"
run_sim "$here/topologies/nvidia-modes.conf" "$work/log3"
a=0000:41:00.0 b=0000:c1:00.0
nv() { # VF ATTRIBUTE: the path of one of a VF's nvidia/ attributes
        printf '%s\n' "$m/bus/pci/devices/$1/nvidia/$2"
}
ctl() {
        printf '%s\n' "$*" > "$m/.sim/ctl"
}
for i in $(seq 20); do
        # mixed-size: VFs, then the mode, then two sizes side by side
        ctl nv-sriov "$a" enable
        ctl nv-shm "$a" 1
        printf '1201\n' > "$(nv 0000:41:00.4 current_vgpu_type)"
        printf '1202\n' > "$(nv 0000:41:00.5 current_vgpu_type)"
        cat "$(nv 0000:41:00.6 creatable_vgpu_types)" "$(nv 0000:41:00.4 placement_id)" > /dev/null
        cat "$(nv 0000:41:00.6 placement_id)" 2>/dev/null && exit 1
        ctl nv-shm "$a" 0 2>/dev/null && exit 1 # a vGPU exists
        # MIG: the mode, VFs, GPU instances, a MIG-backed vGPU in one
        ctl nv-mig "$b" 1
        ctl nv-sriov "$b" enable
        printf '1302\n' > "$(nv 0000:c1:00.4 current_vgpu_type)" 2>/dev/null && exit 1 # no GI yet
        ctl nv-cgi "$b" 1g.24gb
        ctl nv-cgi "$b" 2g.48gb
        ctl nv-cgi "$b" 9g.999gb 2>/dev/null && exit 1
        printf '1302\n' > "$(nv 0000:c1:00.4 current_vgpu_type)"
        printf '1311\n' > "$(nv 0000:c1:00.5 current_vgpu_type)"
        cat "$(nv 0000:c1:00.4 gpu_instance_id)" "$(nv 0000:c1:00.5 placement_id)" > /dev/null
        ctl nv-mig "$b" 0 2>/dev/null && exit 1 # VFs on
        ctl nv-dgi "$b" 2>/dev/null && exit 1   # vGPUs in the GIs
        ctl unbind-hold "$a" 1
        ctl nv-sriov "$a" enable 2>/dev/null && exit 1
        cat "$m/.sim/state" "$m/.sim/counters" > /dev/null
        if ((i % 2)); then
                # tear down in the driver's order
                printf '0\n' > "$(nv 0000:c1:00.4 current_vgpu_type)"
                printf '0\n' > "$(nv 0000:c1:00.5 current_vgpu_type)"
                printf '0\n' > "$(nv 0000:41:00.4 current_vgpu_type)"
                ctl nv-sriov "$b" disable
                ctl nv-dgi "$b"
                ctl nv-mig "$b" 0
                ctl nv-sriov "$a" disable
        else
                ctl reboot # with vGPUs, GIs and modes in place
        fi
done
# a reboot in the middle, then at unmount: a GPU left in MIG mode with a vGPU
ctl nv-mig "$b" 1
ctl nv-sriov "$b" enable
ctl nv-cgi "$b" 1g.24gb
printf '1301\n' > "$(nv 0000:c1:00.4 current_vgpu_type)"
stop_sim "$work/log3"
echo "leak-check: no error, no leak"
