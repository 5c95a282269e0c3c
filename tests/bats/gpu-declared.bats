#!/usr/bin/env bats
# A GPU's declared state beyond NVIDIA's modes (issue 37): an AMD GPU's
# [gpu_<PF>] spatial_partition, which check-config, gpu plan and gpu status
# compare with the partition GIM reads, and never write (a failed partition
# write reports success and only logs). On the simulator: two MI300X
# partitioned CPX (8 VFs) and one DPX (2 VFs), tests/sim/topologies/amd-gim.conf.
# Tested against the model only.

bats_require_minimum_version 1.5.0

load common
load ../sim/sim

CPF=0000:c1:00.0 # CPX: 8 VFs
DPF=0000:c2:00.0 # DPX: 2 VFs
CPX=amd-mxgpu-8
DPX=amd-mxgpu-2

setup() {
        sim_mount amd-gim
}

# amd_conf CPF-PARTITION DPF-PARTITION: both GPUs' types, and their
# declared partitions.
amd_conf() {
        config_types "$CPX" "$CPF" "$DPX" "$DPF" -- \
                "[gpu_$CPF]" "spatial_partition = $1" "[gpu_$DPF]" "spatial_partition = $2"
}

partition() {
        cat "$SIM_SYS/bus/pci/devices/$1/spatial_partition_mode"
}

@test "check-config passes AMD GPUs in their declared partitions" {
        amd_conf CPX DPX
        run "$MH_CLI" check-config
        echo "$output"
        [ "$status" -eq 0 ]
}

@test "check-config says in one line, with its line in the config, when an AMD GPU is not in its declared partition" {
        amd_conf DPX DPX
        run "$MH_CLI" check-config
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"mdev-hooks.conf:"*": GPU $CPF is partitioned CPX (8 VFs), not DPX as [gpu_$CPF] declares: mdev-hooks never changes a partition"* ]]
        [ "$(grep -c "partitioned" <<<"$output")" = 1 ]
        [ "$(partition "$CPF")" = CPX ]
}

@test "check-config refuses a spatial_partition that is not SPX, DPX, QPX or CPX" {
        amd_conf CPX-4 DPX
        run "$MH_CLI" check-config
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"spatial_partition must be SPX, DPX, QPX or CPX, not 'CPX-4'"* ]]
}

@test "gpu plan checks AMD GPUs in their declared partitions, changes nothing, and says so" {
        amd_conf CPX DPX
        run "$MH_CLI" gpu plan
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"$CPF: CPX, 8 VFs: as declared (checked, never changed)"* ]]
        [[ "$output" == *"$DPF: DPX, 2 VFs: as declared (checked, never changed)"* ]]
        run -0 "$MH_CLI" gpu plan "$DPF"
        [ "$output" = "$DPF: DPX, 2 VFs: as declared (checked, never changed)" ]
}

@test "gpu plan fails in one line when an AMD GPU's partition differs, and never writes one" {
        amd_conf CPX QPX
        run --separate-stderr "$MH_CLI" gpu plan "$DPF"
        echo "$stderr"
        [ "$status" -ne 0 ]
        [ "$(wc -l <<<"$stderr")" = 1 ]
        [[ "$stderr" == *"GPU $DPF is partitioned DPX (2 VFs), not QPX as [gpu_$DPF] declares"* ]]
        [ -z "$output" ]
        [ "$(partition "$DPF")" = DPX ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$DPF/sriov_numvfs")" = 2 ]
        # the other GPU is still checked when all are planned
        run "$MH_CLI" gpu plan
        [ "$status" -ne 0 ]
        [[ "$output" == *"$CPF: CPX, 8 VFs: as declared"* ]]
}

@test "gpu plan --if-declared (the service) fails for an AMD GPU not in its declared partition" {
        amd_conf SPX DPX
        run "$MH_CLI" gpu plan --if-declared "$CPF"
        [ "$status" -ne 0 ]
        [[ "$output" == *"GPU $CPF is partitioned CPX (8 VFs), not SPX"* ]]
}

@test "inventory counts an AMD GPU with a declared partition as it does without, running no NVIDIA tool on it" {
        config_types "$CPX" "$CPF" "$DPX" "$DPF"
        run -0 "$MH_CLI" inventory --json
        before=$output
        printf '#!/bin/sh\necho "$*" >> "%s/smi.log"\nexit 1\n' "$BATS_TEST_TMPDIR" > "$BATS_TEST_TMPDIR/nvidia-smi"
        chmod +x "$BATS_TEST_TMPDIR/nvidia-smi"
        amd_conf CPX DPX
        printf '[gpu]\nnvidia_smi = %s\n' "$BATS_TEST_TMPDIR/nvidia-smi" >> "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run -0 "$MH_CLI" inventory --json
        [ "$output" = "$before" ]
        [ ! -e "$BATS_TEST_TMPDIR/smi.log" ]
}

@test "gpu status shows an AMD GPU's declared partition beside the one it is in" {
        amd_conf CPX QPX
        run -0 "$MH_CLI" gpu status
        echo "$output"
        [[ "$(grep "^$CPF" <<<"$output")" =~ ^$CPF\ +CPX\ +n/a\ +n/a\ +8\ +-?\ *none$ ]]
        [[ "$(grep "^$DPF" <<<"$output")" == *"QPX"*" 2 "*"differs: is DPX, 2 VFs" ]]
}

@test "gpu status --json gives an AMD GPU's declared and actual partition" {
        amd_conf CPX QPX
        run -0 "$MH_CLI" gpu status --json
        [ "$(jq -r --arg p "$CPF" '.gpus[] | select(.address == $p) | "\(.declared_spatial_partition) \(.spatial_partition) \(.numvfs) \(.partition_differs)"' <<<"$output")" = "CPX CPX 8 false" ]
        [ "$(jq -r --arg p "$DPF" '.gpus[] | select(.address == $p) | "\(.declared_spatial_partition) \(.spatial_partition) \(.numvfs) \(.partition_differs)"' <<<"$output")" = "QPX DPX 2 true" ]
        [ "$(jq -r '[.gpus[].pending_steps[]] | length' <<<"$output")" = 0 ]
}

@test "the udev rule wants mdev-hooks-gpu@PF.service for an AMD PF bound to gim, not for one unbound" {
        command -v udevadm > /dev/null || skip "udevadm is not installed"
        unshare -m true 2> /dev/null || skip "cannot make a mount namespace here"
        [ -z "${MH_PREFIX:-}" ] || skip "reads the rules of the build tree"
        rule_wants /devices/pci0000:c0/0000:c0:01.0/$CPF 0x1002 gim
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"SYSTEMD_WANTS=mdev-hooks-gpu@$CPF.service"* ]]
        rm -rf "$BATS_TEST_TMPDIR/fakesys"
        rule_wants /devices/pci0000:c0/0000:c0:01.0/$CPF 0x1002
        [[ "$output" != *"SYSTEMD_WANTS"* ]]
}

# --- Intel xe: [gpu_<PF>] vfs and vram_quota, on tests/sim/topologies/intel-xe.conf

XPF=0000:03:00.0  # 24 GiB, 4 VFs possible, none enabled
NOPF=0000:04:00.0 # not in PF mode (sriov_totalvfs 0)
IGPU=0000:05:00.0 # no VRAM (a quota: EPERM), 2 VFs enabled

# xe_conf LINE...: the intel-xe topology mounted instead, and a config of
# only the LINEs.
xe_conf() {
        sim_umount
        sim_mount intel-xe
        config_write "$(printf '%s\n' "$@")"
}

xattr() {
        cat "$SIM_SYS/bus/pci/devices/$1/$2"
}

quotas() {
        local k
        for k in 1 2 3 4; do xattr "$1" "sriov_admin/vf$k/profile/vram_quota"; done | tr '\n' ' '
}

@test "gpu plan gives an Intel GPU's VFs their VRAM quota, then enables them, and reads both back" {
        xe_conf "[gpu_$XPF]" "vfs = 3" "vram_quota = 6G"
        run -0 "$MH_CLI" gpu plan
        [ "$output" = "$XPF: 3 VFs, 6G of VRAM each: brought to its declared state (4 writes)" ]
        [ "$(xattr "$XPF" sriov_numvfs)" = 3 ]
        [ "$(quotas "$XPF")" = "6442450944 6442450944 6442450944 0 " ]
}

@test "gpu plan a second time leaves an Intel GPU's VFs as they are" {
        xe_conf "[gpu_$XPF]" "vfs = 3" "vram_quota = 6G"
        "$MH_CLI" gpu plan > /dev/null
        run -0 "$MH_CLI" gpu plan "$XPF"
        [ "$output" = "$XPF: 3 VFs, 6G of VRAM each: already in its declared state" ]
        [ "$(xattr "$XPF" sriov_numvfs)" = 3 ]
}

@test "gpu plan without vram_quota enables the VFs and lets the driver share the VRAM out" {
        xe_conf "[gpu_$XPF]" "vfs = 4"
        run -0 "$MH_CLI" gpu plan
        [ "$output" = "$XPF: 4 VFs, VRAM shared out by the driver: brought to its declared state (1 write)" ]
        [ "$(xattr "$XPF" sriov_numvfs)" = 4 ]
}

@test "once the VFs are gone, as after a reboot, gpu plan gives them back with their quotas" {
        xe_conf "[gpu_$XPF]" "vfs = 2" "vram_quota = 8G"
        "$MH_CLI" gpu plan > /dev/null
        printf '0\n' > "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs"
        [ "$(quotas "$XPF")" = "0 0 0 0 " ]
        run -0 "$MH_CLI" gpu plan
        [[ "$output" == *"brought to its declared state (3 writes)"* ]]
        [ "$(quotas "$XPF")" = "8589934592 8589934592 0 0 " ]
}

@test "gpu plan never disables an Intel GPU's VFs enabled otherwise: one line says what to do" {
        xe_conf "[gpu_$XPF]" "vfs = 2" "vram_quota = 6G"
        printf '3\n' > "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs"
        run --separate-stderr "$MH_CLI" gpu plan
        echo "$stderr"
        [ "$status" -ne 0 ]
        [ "$(wc -l <<<"$stderr")" = 1 ]
        [[ "$stderr" == *"GPU $XPF has 3 VFs enabled, not the 2 [gpu_$XPF] declares: mdev-hooks never disables VFs a guest may hold; when none does, write 0 to /sys/bus/pci/devices/$XPF/sriov_numvfs and run gpu plan again"* ]]
        [ "$(xattr "$XPF" sriov_numvfs)" = 3 ]
}

@test "a quota the driver refuses is one line with the file, the value and the errno, and no VF is enabled" {
        xe_conf "[gpu_$XPF]" "vfs = 2" "vram_quota = 20G"
        run --separate-stderr "$MH_CLI" gpu plan
        echo "$stderr"
        [ "$status" -ne 0 ]
        [ "$(wc -l <<<"$stderr")" = 1 ]
        [[ "$stderr" == *"cannot write '21474836480' to '/sys/bus/pci/devices/$XPF/sriov_admin/vf2/profile/vram_quota': Input/output error (EIO)"* ]]
        [ "$(xattr "$XPF" sriov_numvfs)" = 0 ]
}

@test "a quota on a GPU without VRAM fails with EPERM; more VFs than the GPU offers are refused before any write" {
        xe_conf "[gpu_$IGPU]" "vfs = 2" "vram_quota = 1G"
        printf '0\n' > "$SIM_SYS/bus/pci/devices/$IGPU/sriov_numvfs"
        run "$MH_CLI" gpu plan
        [ "$status" -ne 0 ]
        [[ "$output" == *"vf1/profile/vram_quota': Operation not permitted (EPERM)"* ]]
        config_write "$(printf '%s\n' "[gpu_$XPF]" "vfs = 5" "vram_quota = 1G")"
        run "$MH_CLI" gpu plan
        [ "$status" -ne 0 ]
        [[ "$output" == *"GPU $XPF offers 4 VFs (/sys/bus/pci/devices/$XPF/sriov_totalvfs), fewer than the 5 [gpu_$XPF] declares"* ]]
        [ "$(quotas "$XPF")" = "0 0 0 0 " ]
}

@test "check-config names an Intel GPU that cannot have its declared VFs, with its line" {
        xe_conf "[gpu_$XPF]" "vfs = 5" "[gpu_$NOPF]" "vfs = 1"
        run "$MH_CLI" check-config
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"mdev-hooks.conf:1: GPU $XPF offers 4 VFs"* ]]
        [[ "$output" == *"mdev-hooks.conf:3: GPU $NOPF offers 0 VFs"* ]]
        config_write "$(printf '%s\n' "[gpu_$XPF]" "vfs = 4" "vram_quota = 6G")"
        run "$MH_CLI" check-config
        echo "$output"
        [ "$status" -eq 0 ]
}

@test "gpu status shows an Intel GPU's declared VFs and quota, and what a plan would do" {
        xe_conf "[gpu_$XPF]" "vfs = 2" "vram_quota = 6G" "[gpu_$IGPU]" "vfs = 1"
        run -0 "$MH_CLI" gpu status
        echo "$output"
        [[ "$(grep "^$XPF" <<<"$output")" =~ ^$XPF\ +2\ VFs\ x\ 6G\ +n/a\ +n/a\ +0\ +-\ +provision$ ]]
        [[ "$(grep "^$IGPU" <<<"$output")" == *"1 VFs"*" 2 "*"differs: 2 VFs enabled" ]]
        "$MH_CLI" gpu plan "$XPF" > /dev/null
        run -0 "$MH_CLI" gpu status --json
        [ "$(jq -r --arg p "$XPF" '.gpus[] | select(.address == $p) | "\(.declared_vfs) \(.declared_vram_quota) \(.numvfs) \(.provisioned) \(.pending_steps | length)"' <<<"$output")" = "2 6442450944 2 true 0" ]
}

# --- Intel xe: each VF's own quota and a declared scheduling profile

GIB=1073741824
MIXED=(8G 8G 4G 4G)         # the quota of vf1..vf4, as the config writes them
EQ=20                       # exec_quantum_ms, every VF's
PT=(500000 500000 1000 1000) # preempt_timeout_us of vf1..vf4

# xe_mixed_conf [LINE...]: XPF's four VFs of two quotas and its scheduling
# declared (the lists above), then LINEs.
xe_mixed_conf() {
        xe_conf "[gpu_$XPF]" "vfs = ${#MIXED[@]}" "vram_quota = $(joined "${MIXED[@]}")" "exec_quantum_ms = $EQ" \
                "preempt_timeout_us = $(joined "${PT[@]}")" "$@"
}

# joined WORD...: "8G, 8G, 4G, 4G".
joined() {
        local out="$1"
        shift
        for w in "$@"; do out+=", $w"; done
        printf '%s\n' "$out"
}

# bytes SIZE: 8G as bytes.
bytes() {
        case "$1" in
        *G) echo $((${1%G} * GIB)) ;;
        *M) echo $((${1%M} * 1048576)) ;;
        *) echo "$1" ;;
        esac
}

# assert_declared: XPF has its VFs, each with the quota and scheduling
# the lists above declare (vfN read from sriov_admin/vfN/profile/).
assert_declared() {
        local k
        [ "$(xattr "$XPF" sriov_numvfs)" = "${#MIXED[@]}" ]
        for k in "${!MIXED[@]}"; do
                [ "$(xattr "$XPF" "sriov_admin/vf$((k + 1))/profile/vram_quota")" = "$(bytes "${MIXED[k]}")" ]
                [ "$(xattr "$XPF" "sriov_admin/vf$((k + 1))/profile/exec_quantum_ms")" = "$EQ" ]
                [ "$(xattr "$XPF" "sriov_admin/vf$((k + 1))/profile/preempt_timeout_us")" = "${PT[k]}" ]
        done
}

# writes_said: the N of "(N writes)" in $output.
writes_said() {
        sed -n 's/.*(\([0-9]*\) writes\?).*/\1/p' <<<"$output"
}

@test "gpu plan gives each of an Intel GPU's VFs its own quota and the declared scheduling, then enables them, all read back" {
        xe_mixed_conf
        sim_counters_reset
        run -0 "$MH_CLI" gpu plan "$XPF"
        echo "$output"
        [[ "$output" == "$XPF: 4 VFs, VRAM 8G/8G/4G/4G, exec_quantum_ms $EQ, preempt_timeout_us 500000/500000/1000/1000: brought to its declared state ("*" writes)" ]]
        assert_declared
        # what it says it wrote is what the driver was asked
        [ "$(writes_said)" = "$(sim_counter_total writes)" ]
}

@test "gpu plan a second time leaves an Intel GPU with mixed quotas and its scheduling as they are, writing nothing" {
        xe_mixed_conf
        "$MH_CLI" gpu plan > /dev/null
        sim_counters_reset
        run -0 "$MH_CLI" gpu plan "$XPF"
        [[ "$output" == "$XPF: 4 VFs, VRAM 8G/8G/4G/4G, "*": already in its declared state" ]]
        [ "$(sim_counter_total writes)" = 0 ]
        assert_declared
}

@test "after a reboot (VFs, quotas and scheduling gone) gpu plan gives every VF its own quota and scheduling back" {
        xe_mixed_conf
        "$MH_CLI" gpu plan > /dev/null
        sim_reboot
        [ "$(xattr "$XPF" sriov_numvfs)" = 0 ]
        [ "$(quotas "$XPF")" = "0 0 0 0 " ]
        [ "$(xattr "$XPF" sriov_admin/vf1/profile/exec_quantum_ms)" = 0 ]
        run -0 "$MH_CLI" gpu plan --if-declared "$XPF"
        [[ "$output" == *"brought to its declared state"* ]]
        assert_declared
}

@test "a mixed quota the firmware refuses (EIO) is one line with the file, the value and the errno, and no VF is enabled" {
        # 8G, 8G, 4G and 12G: 32 GiB, more than the GPU's 24
        MIXED=(8G 8G 4G 12G)
        xe_mixed_conf
        run --separate-stderr "$MH_CLI" gpu plan "$XPF"
        echo "$stderr"
        [ "$status" -ne 0 ]
        [ "$(wc -l <<<"$stderr")" = 1 ]
        [[ "$stderr" == *"cannot write '$(bytes 12G)' to '/sys/bus/pci/devices/$XPF/sriov_admin/vf4/profile/vram_quota': Input/output error (EIO)"* ]]
        [ "$(xattr "$XPF" sriov_numvfs)" = 0 ]
}

@test "a scheduling value the driver refuses (EPERM, EIO) is one line with the file, the value and the errno, and no VF is enabled" {
        local e msg
        xe_mixed_conf
        for e in EPERM EIO; do
                sim_ctl xe-sched-refuse "$XPF" "$e" knob=exec_quantum_ms
                run --separate-stderr "$MH_CLI" gpu plan "$XPF"
                echo "$stderr"
                [ "$status" -ne 0 ]
                [ "$(wc -l <<<"$stderr")" = 1 ]
                msg=$([ "$e" = EPERM ] && echo "Operation not permitted" || echo "Input/output error")
                [[ "$stderr" == *"cannot write '$EQ' to '/sys/bus/pci/devices/$XPF/sriov_admin/vf1/profile/exec_quantum_ms': $msg ($e)"* ]]
                [ "$(xattr "$XPF" sriov_numvfs)" = 0 ]
        done
        sim_ctl xe-sched-refuse "$XPF" 0
        run -0 "$MH_CLI" gpu plan "$XPF"
        assert_declared
}

@test "with its VFs as declared and only the scheduling changed, gpu plan writes back the knobs alone" {
        xe_mixed_conf
        "$MH_CLI" gpu plan > /dev/null
        printf '7\n' > "$SIM_SYS/bus/pci/devices/$XPF/sriov_admin/vf3/profile/exec_quantum_ms"
        run -0 "$MH_CLI" gpu status --json
        [ "$(jq -r --arg p "$XPF" '.gpus[] | select(.address == $p) | .pending_steps | join(",")' <<<"$output")" = schedule ]
        sim_counters_reset
        run -0 "$MH_CLI" gpu plan "$XPF"
        [[ "$output" == *"brought to its declared state (1 write)" ]]
        [ "$(sim_counter_total writes)" = 1 ]
        assert_declared
}

@test "a per-VF list whose length is not vfs is a config error naming its line, and the plan writes nothing" {
        xe_conf "[gpu_$XPF]" "vfs = 4" "vram_quota = 8G, 8G, 4G" "exec_quantum_ms = 20, 10"
        run "$MH_CLI" check-config
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"mdev-hooks.conf:3: vram_quota lists 3 values but [gpu_$XPF] has vfs = 4: give one value for every VF, or one per VF"* ]]
        [[ "$output" == *"mdev-hooks.conf:4: exec_quantum_ms lists 2 values but [gpu_$XPF] has vfs = 4"* ]]
        sim_counters_reset
        run "$MH_CLI" gpu plan "$XPF"
        [ "$status" -ne 0 ]
        [[ "$output" == *"mdev-hooks.conf:3: vram_quota lists 3 values"* ]]
        [ "$(sim_counter_total writes)" = 0 ]
        [ "$(xattr "$XPF" sriov_numvfs)" = 0 ]
}

@test "check-config lets an Intel GPU serve the two types its declared quotas give, and names a type they do not" {
        config_types intel-xe-8192 "$XPF" intel-xe-4096 "$XPF" -- \
                "[gpu_$XPF]" "vfs = 4" "vram_quota = $(joined "${MIXED[@]}")"
        sim_umount
        sim_mount intel-xe
        "$MH_CLI" gpu plan > /dev/null
        run "$MH_CLI" check-config
        echo "$output"
        [ "$status" -eq 0 ]
        config_types intel-xe-8192 "$XPF" intel-xe-6144 "$XPF" -- \
                "[gpu_$XPF]" "vfs = 4" "vram_quota = $(joined "${MIXED[@]}")"
        run "$MH_CLI" check-config
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"'$XPF' is listed under intel-xe-6144, but [gpu_$XPF] (line "*") declares VFs of intel-xe-8192, intel-xe-4096 only (vram_quota, in MiB)"* ]]
        config_types intel-xe-8192 "$XPF" intel-xe-4096 "$XPF" -- "[gpu_$XPF]" "vfs = 4"
        run "$MH_CLI" check-config
        [ "$status" -ne 0 ]
        [[ "$output" == *"'$XPF' is listed under two types, intel-xe-8192 (line "*") and intel-xe-4096, but [gpu_$XPF] (line "*") declares no vram_quota"* ]]
}

@test "gpu status shows an Intel GPU's declared quotas and scheduling per VF" {
        xe_mixed_conf
        run -0 "$MH_CLI" gpu status
        echo "$output"
        [[ "$(grep "^$XPF" <<<"$output")" == "$XPF  4 VFs x 8G/8G/4G/4G, exec_quantum_ms $EQ, preempt_timeout_us 500000/500000/1000/1000 "*" provision" ]]
        "$MH_CLI" gpu plan "$XPF" > /dev/null
        run -0 "$MH_CLI" gpu status --json
        local q
        q=$(jq -c --arg p "$XPF" '.gpus[] | select(.address == $p)' <<<"$output")
        [ "$(jq -c .declared_vram_quotas <<<"$q")" = "[$(bytes 8G),$(bytes 8G),$(bytes 4G),$(bytes 4G)]" ]
        [ "$(jq -c .declared_exec_quantum_ms <<<"$q")" = "[$EQ,$EQ,$EQ,$EQ]" ]
        [ "$(jq -c .declared_preempt_timeout_us <<<"$q")" = "[$(joined "${PT[@]}" | tr -d ' ')]" ]
        [ "$(jq -r '"\(.declared_vram_quota) \(.provisioned) \(.pending_steps | length)"' <<<"$q")" = "null true 0" ]
}

@test "the udev rule wants mdev-hooks-gpu@PF.service for an Intel PF bound to xe, not for its VFs" {
        command -v udevadm > /dev/null || skip "udevadm is not installed"
        unshare -m true 2> /dev/null || skip "cannot make a mount namespace here"
        [ -z "${MH_PREFIX:-}" ] || skip "reads the rules of the build tree"
        rule_wants /devices/pci0000:00/0000:00:01.0/$XPF 0x8086 xe 4
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"SYSTEMD_WANTS=mdev-hooks-gpu@$XPF.service"* ]]
        rm -rf "$BATS_TEST_TMPDIR/fakesys"
        rule_wants /devices/pci0000:00/0000:00:01.0/0000:03:00.1 0x8086 xe
        [[ "$output" != *"SYSTEMD_WANTS"* ]]
}
