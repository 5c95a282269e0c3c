#!/usr/bin/env bats
# Intel xe SR-IOV (GPU-MODES.md §4): the simulator's model of sriov_admin/
# and sriov_numvfs (tests/sim/sim-xe.c) on tests/sim/topologies/intel-xe.conf,
# errors included. Tested against the model only.

load hook-helpers

XPF=0000:03:00.0 # 24 GiB, 4 VFs possible, none enabled
NOPF=0000:04:00.0 # not in PF mode, an older kernel
IGPU=0000:05:00.0 # no VRAM, 2 VFs enabled
GIB=1073741824

setup() {
        sim_mount intel-xe
}

admin() {
        printf '%s' "$SIM_SYS/bus/pci/devices/$XPF/sriov_admin/$1"
}

# put VALUE FILE: writes as a tool would; the status is bash's.
put() {
        bash -c "printf '%s\n' '$1' > '$2'" 2>&1
}

@test "sim xe: sriov_admin has a vfN per possible VF before the VFs are, each with its profile and stop" {
        [ "$(basename "$(readlink "$SIM_SYS/bus/pci/devices/$XPF/driver")")" = xe ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$XPF/sriov_totalvfs")" = 4 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs")" = 0 ]
        [ "$(ls "$(admin .)" | tr '\n' ' ')" = "vf1 vf2 vf3 vf4 " ]
        [ "$(ls "$(admin vf1/profile)" | tr '\n' ' ')" = "exec_quantum_ms preempt_timeout_us sched_priority vram_quota " ]
        [ "$(cat "$(admin vf1/profile/sched_priority)")" = "[low] normal" ]
        [ ! -e "$(admin vf1/device)" ]
}

@test "sim xe: enabling VFs without quotas shares the VRAM out evenly, with a device link per VF" {
        run -0 put 4 "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs"
        for i in 1 2 3 4; do
                [ "$(cat "$(admin "vf$i/profile/vram_quota")")" = $((6 * GIB)) ]
        done
        [ "$(basename "$(readlink "$(admin vf1/device)")")" = 0000:03:00.4 ]
        [ "$(basename "$(readlink -f "$SIM_SYS/bus/pci/devices/0000:03:00.4/driver")")" = xe ]
}

@test "sim xe: a quota given before enabling is kept, and disabling releases every VF's provisioning" {
        run -0 put $((8 * GIB)) "$(admin vf1/profile/vram_quota)"
        run -0 put 20 "$(admin vf1/profile/exec_quantum_ms)"
        run -0 put 2 "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs"
        [ "$(cat "$(admin vf1/profile/vram_quota)")" = $((8 * GIB)) ]
        [ "$(cat "$(admin vf2/profile/vram_quota)")" = 0 ]
        run -0 put 0 "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs"
        [ "$(cat "$(admin vf1/profile/vram_quota)")" = 0 ]
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 0 ]
        [ ! -e "$(admin vf1/device)" ]
}

@test "sim xe: sriov_numvfs fails with ERANGE above totalvfs, EBUSY while enabled, ENODEV out of PF mode" {
        run put 5 "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs"
        [[ "$output" == *"Numerical result out of range"* ]]
        run -0 put 2 "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs"
        run put 3 "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs"
        [[ "$output" == *"Device or resource busy"* ]]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs")" = 2 ]
        run put 1 "$SIM_SYS/bus/pci/devices/$NOPF/sriov_numvfs"
        [[ "$output" == *"No such device"* ]]
}

@test "sim xe: a profile write fails with EINVAL malformed, EACCES on sched_priority, EPERM without VRAM, EIO beyond it" {
        run put -1 "$(admin vf1/profile/exec_quantum_ms)"
        [[ "$output" == *"Invalid argument"* ]]
        run put 4294967296 "$(admin vf1/profile/preempt_timeout_us)"
        [[ "$output" == *"Invalid argument"* ]]
        run put high "$(admin vf1/profile/sched_priority)"
        [[ "$output" == *"Permission denied"* ]]
        run put "$GIB" "$SIM_SYS/bus/pci/devices/$IGPU/sriov_admin/vf1/profile/vram_quota"
        [[ "$output" == *"Operation not permitted"* ]]
        run -0 put $((16 * GIB)) "$(admin vf1/profile/vram_quota)"
        run put $((16 * GIB)) "$(admin vf2/profile/vram_quota)"
        [[ "$output" == *"Input/output error"* ]]
        [ "$(cat "$(admin vf2/profile/vram_quota)")" = 0 ]
}

@test "sim xe: the vram_quota of a running VF cannot change; its scheduling can" {
        run -0 put 4 "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs"
        sim_ctl vf-open 0000:03:00.4
        run put $((4 * GIB)) "$(admin vf1/profile/vram_quota)"
        [[ "$output" == *"Device or resource busy"* ]]
        [ "$(cat "$(admin vf1/profile/vram_quota)")" = $((6 * GIB)) ]
        run -0 put 25 "$(admin vf1/profile/exec_quantum_ms)"
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 25 ]
        sim_ctl vf-close 0000:03:00.4
        run -0 put $((4 * GIB)) "$(admin vf1/profile/vram_quota)"
}
