# The sysfs simulator's helpers for bats tests, benchmarks and demos.
#
# In a bats file:            load common; load ../sim/sim
#                            (its teardown unmounts; a file that defines its
#                            own teardown calls sim_umount there)
# In a plain bash script:    source tests/sim/sim.bash; SIM_ROOT=/tmp/x sim_mount mtty
#                            trap sim_umount EXIT
#
# Needs MH_SIM (the built mdev-sysfs-sim; tests/bats/common.bash sets it) or
# MH_BUILD_DIR. A root made by sim_mount looks like a host's /:
#   ROOT/sys/                           the simulator's mount (SIM_SYS)
#   ROOT/proc/sys/kernel/random/boot_id a random UUID (sim_new_boot changes it)
#   ROOT/etc/mdev-hooks/  ROOT/var/lib/  ROOT/run/
# Programs are pointed at it with MDEV_HOOKS_ROOT=ROOT (exported).
#
# Every helper below acts on the simulator at $SIM_SYS; to act on another
# root (two hosts in a migration test), prefix the call:
#   SIM_SYS=$B/sys sim_unregister 0000:84:00.0     or: sim_use $B
# Control commands go to the hidden file $SIM_SYS/.sim/ctl (see README.md).
# SIM_FLAGS adds options to the simulator, e.g. SIM_FLAGS=-n: no kernel
# caching at all (a check that no test depends on the cache).

SIM_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../pid.bash
source "$SIM_DIR/../pid.bash"
: "${MH_SIM:=${MH_BUILD_DIR:+$MH_BUILD_DIR/tests/sim/mdev-sysfs-sim}}"
_SIM_MOUNTS=()

# In a bats file, the default teardown: stop what the test left running in
# the background (common.bash's stop_started: a test that failed half way),
# then unmount what it mounted.
if [ -n "${BATS_TEST_FILENAME:-}" ]; then
        teardown() {
                ! declare -F stop_started > /dev/null || stop_started
                sim_umount
        }
fi

# sim_topology NAME-OR-PATH: prints the topology file: a path as is, or
# tests/sim/topologies/NAME.conf.
sim_topology() {
        if [[ "$1" == */* || -f "$1" ]]; then
                printf '%s\n' "$1"
        else
                printf '%s\n' "$SIM_DIR/topologies/$1.conf"
        fi
}

# sim_mount TOPOLOGY [ROOT]: makes ROOT (default $SIM_ROOT, else
# $BATS_TEST_TMPDIR/root) with the layout above, mounts the simulator with
# TOPOLOGY (a name from tests/sim/topologies/ such as mtty, or a path) on
# ROOT/sys, and exports MDEV_HOOKS_ROOT=ROOT and SIM_SYS=ROOT/sys. Call it
# once per root; two roots in one test are fine (the last one mounted is the
# current one, see sim_use).
sim_mount() {
        local topo root
        topo="$(sim_topology "$1")"
        root="${2:-${SIM_ROOT:-${BATS_TEST_TMPDIR:?sim_mount: give a ROOT or set SIM_ROOT}/root}}"
        if [ -z "${MH_SIM:-}" ] || [ ! -x "$MH_SIM" ]; then
                echo "sim_mount: the simulator is not built (MH_SIM='${MH_SIM:-}')" >&2
                return 1
        fi
        if mountpoint -q "$root/sys" 2>/dev/null; then
                echo "sim_mount: $root/sys is mounted already" >&2
                return 1
        fi
        mkdir -p "$root/sys" "$root/proc/sys/kernel/random" "$root/etc/mdev-hooks" \
                "$root/var/lib" "$root/run" || return 1
        cat /proc/sys/kernel/random/uuid > "$root/proc/sys/kernel/random/boot_id" || return 1
        # shellcheck disable=SC2086 # SIM_FLAGS is a list of words
        "$MH_SIM" ${SIM_FLAGS:-} "$topo" "$root/sys" || return 1
        _SIM_MOUNTS+=("$root/sys")
        sim_use "$root"
}

# sim_use ROOT: makes ROOT (mounted by sim_mount) the current one: exports
# MDEV_HOOKS_ROOT=ROOT and SIM_SYS=ROOT/sys.
sim_use() {
        MDEV_HOOKS_ROOT="$1"
        SIM_SYS="$1/sys"
        export MDEV_HOOKS_ROOT SIM_SYS
}

# sim_umount [ROOT...]: unmounts the given roots' simulators, or with no
# argument every simulator mounted by this shell or below $BATS_TEST_TMPDIR
# (so a teardown cleans up even when the test failed half way). Waits for a
# blocked remove to finish, then falls back to a lazy unmount, and makes sure
# the simulator's process ends (a copy of the mount in another mount
# namespace, e.g. one made by "unshare -m", would keep it serving). Never fails.
sim_umount() {
        local m mounts=() i pid
        if [ $# -gt 0 ]; then
                for m in "$@"; do mounts+=("${m%/}/sys"); done
        else
                mounts=("${_SIM_MOUNTS[@]}")
                if [ -n "${BATS_TEST_TMPDIR:-}" ]; then
                        while read -r m; do mounts+=("$m"); done < <(
                                awk -v p="$BATS_TEST_TMPDIR/" '$1 == "mdev-sysfs-sim" && index($2, p) == 1 { print $2 }' /proc/self/mounts)
                fi
        fi
        for m in "${mounts[@]}"; do
                grep -q " $m fuse" /proc/self/mounts 2>/dev/null || continue
                pid=$(awk '$1 == "pid" { print $2 }' "$m/.sim/state" 2>/dev/null)
                for i in $(seq 50); do
                        fusermount3 -u "$m" 2>/dev/null && break
                        sleep 0.1
                done
                if grep -q " $m fuse" /proc/self/mounts 2>/dev/null; then
                        fusermount3 -uz "$m" 2>/dev/null || true
                fi
                [[ "$pid" =~ ^[0-9]+$ ]] || continue
                for i in $(seq 20); do
                        pid_running "$pid" || break
                        sleep 0.05
                done
                # still there (and still the simulator, not a reused pid)
                if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = mdev-sysfs-sim ]; then
                        kill -TERM "$pid" 2>/dev/null || true
                fi
        done
        _SIM_MOUNTS=()
        return 0
}

# sim_ctl COMMAND [ARGS...]: sends one control command (README.md) to the
# simulator at $SIM_SYS. Fails if the simulator rejects it.
sim_ctl() {
        printf '%s\n' "$*" > "$SIM_SYS/.sim/ctl"
}

# sim_create_fail ERRNO [PARENT] [COUNT]: the next COUNT (default 1) creates
# (on PARENT only, if given) fail with ERRNO (a name such as EIO or a
# number), after the UUID checks (EINVAL, EEXIST) like a driver's probe.
sim_create_fail() {
        sim_ctl create-fail "$1" ${2:+parent=$2} ${3:+count=$3}
}

# sim_remove_block MS [UUID]: from now on a remove (of UUID only, if given)
# blocks MS milliseconds, then succeeds, like a device QEMU still holds.
# Meanwhile the mdev's "remove" file is gone but the mdev is still there.
# sim_remove_block 0 ends it.
sim_remove_block() {
        sim_ctl remove-block "$1" ${2:+uuid=$2}
}

# sim_remove_busy N [UUID]: the next N removes (of UUID only) fail with EBUSY.
sim_remove_busy() {
        sim_ctl remove-busy "$1" ${2:+uuid=$2}
}

# sim_faults_reset: clears every fault set above.
sim_faults_reset() {
        sim_ctl faults-reset
}

# sim_unregister PARENT: the parent unregisters, as when its driver unloads:
# its mdevs vanish, class/mdev_bus/PARENT and its mdev_supported_types go;
# a PCI device (devices/..., bus/pci/devices/PARENT) stays, a virtual one
# (devices/virtual/mtty/mtty) goes as when its module unloads.
sim_unregister() {
        sim_ctl unregister "$1"
}

# sim_register PARENT [MS]: the parent registers again (with no mdevs), at
# once or MS milliseconds from now (sim_register returns at once).
sim_register() {
        sim_ctl register "$1" ${2:+after=$2}
}

# sim_state: prints the simulator's model: mdev count, each parent's state
# and use, the faults set.
sim_state() {
        cat "$SIM_SYS/.sim/state"
}

# sim_counters: prints the access counters since the mount or the last
# sim_counters_reset, one line per path below the mount, sorted:
#   OPENS READS WRITES READDIRS GETATTRS READLINKS /path
# after a header line starting with '#'. Paths are as the kernel asks for
# them (links already resolved: /devices/..., not /class/mdev_bus/...).
sim_counters() {
        cat "$SIM_SYS/.sim/counters"
}

# sim_counters_reset: sets every counter back to 0.
sim_counters_reset() {
        sim_ctl counters-reset
}

# sim_counter_total COLUMN: the sum of one column (opens, reads, writes,
# readdirs, getattrs, readlinks) over all paths.
sim_counter_total() {
        local col
        case "$1" in
        opens) col=1 ;; reads) col=2 ;; writes) col=3 ;; readdirs) col=4 ;;
        getattrs) col=5 ;; readlinks) col=6 ;;
        *) echo "sim_counter_total: unknown column '$1'" >&2; return 1 ;;
        esac
        sim_counters | awk -v c="$col" '!/^#/ { s += $c } END { print s + 0 }'
}

# sim_files_opened: how many distinct files were opened (read or written).
sim_files_opened() {
        sim_counters | awk '!/^#/ && $1 > 0 { n++ } END { print n + 0 }'
}

# sim_new_boot: writes a new random boot_id into the current root, as a
# reboot would (the mdevs themselves are not touched: unregister and
# register the parents to play that).
sim_new_boot() {
        cat /proc/sys/kernel/random/uuid > "$MDEV_HOOKS_ROOT/proc/sys/kernel/random/boot_id"
}

# sim_reboot: a reboot as NVIDIA's GPUs see it (sim-nvmodes.c): every vfio
# GPU loses its VFs, vGPUs, MIG and heterogeneous modes and GPU instances,
# and the root gets a new boot_id.
sim_reboot() {
        sim_ctl reboot && sim_new_boot
}

# sim_type_dir PARENT TYPE: prints $SIM_SYS/class/mdev_bus/PARENT/mdev_supported_types/TYPE.
sim_type_dir() {
        printf '%s\n' "$SIM_SYS/class/mdev_bus/$1/mdev_supported_types/$2"
}

# sim_available PARENT TYPE: prints available_instances of TYPE on PARENT.
sim_available() {
        cat "$(sim_type_dir "$1" "$2")/available_instances"
}

# sim_create PARENT TYPE UUID: creates an mdev directly (as an operator
# would by hand, outside mdev-hooks).
sim_create() {
        printf '%s\n' "$3" > "$(sim_type_dir "$1" "$2")/create"
}

# sim_remove UUID: removes an mdev directly.
sim_remove() {
        printf '1\n' > "$SIM_SYS/bus/mdev/devices/$1/remove"
}

# sim_mdevs: prints the UUIDs of every mdev, sorted.
sim_mdevs() {
        ls "$SIM_SYS/bus/mdev/devices" | sort
}

# NVIDIA's vendor-specific VFIO framework (a "vfio" topology statement).
# sim_vf_open VF / sim_vf_close VF: a guest (QEMU) opens or closes the VF;
# while open, writing 0 to its current_vgpu_type fails with EPERM.
sim_vf_open() {
        sim_ctl "vf-open $1"
}
sim_vf_close() {
        sim_ctl "vf-close $1"
}
# sim_vf_type VF: prints the VF's current_vgpu_type (0: none).
sim_vf_type() {
        cat "$SIM_SYS/bus/pci/devices/$1/nvidia/current_vgpu_type"
}
# sim_vf_program VF ID: writes ID (0 clears) to current_vgpu_type, as an
# operator would by hand.
sim_vf_program() {
        printf '%s\n' "$2" > "$SIM_SYS/bus/pci/devices/$1/nvidia/current_vgpu_type"
}
# sim_vf_creatable VF: the IDs in the VF's creatable_vgpu_types, one a line.
sim_vf_creatable() {
        sed -n 's/^\([0-9][0-9]*\) *: .*/\1/p' "$SIM_SYS/bus/pci/devices/$1/nvidia/creatable_vgpu_types"
}
