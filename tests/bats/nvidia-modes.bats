#!/usr/bin/env bats
# NVIDIA's modes per GPU (equal-size, mixed-size, MIG) on the vendor-specific
# VFIO framework: the simulator's model of the driver and of sriov-manage
# and nvidia-smi (doc/design.md §9), then the boot plan
# (mdev-hooks gpu plan) and what the programs do in each mode.
# Tested against the simulator's model only: no GPU.

bats_require_minimum_version 1.5.0

load common
load ../sim/sim

PF1=0000:41:00.0 # declared mixed in the plan's tests
PF2=0000:c1:00.0 # declared mig
T4=1201  # DC-4Q, 4 GiB time-sliced
T8=1202  # DC-8Q, 8 GiB time-sliced
M24=1301 # DC-1-24Q: one per 1-slice GPU instance
M8=1302  # DC-1-8Q: three per 1-slice GPU instance
SRIOV_MANAGE="$MH_SOURCE_DIR/tests/nvidia-tools/sriov-manage"
NVIDIA_SMI="$MH_SOURCE_DIR/tests/nvidia-tools/nvidia-smi"

setup() {
        sim_mount nvidia-modes
}

# vf PF N: the address of the PF's VF N (function 4 onwards).
vf() {
        local bus="${1%:*}" f=$((4 + $2))
        printf '%s:%02x.%d\n' "$bus" $((f / 8)) $((f % 8))
}

nvattr() {
        printf '%s\n' "$SIM_SYS/bus/pci/devices/$1/nvidia/$2"
}

# creatable VF: the type IDs the VF lists now, one a line.
creatable() {
        awk 'NR > 1 { print $1 }' "$(nvattr "$1" creatable_vgpu_types)"
}

program() {
        printf '%s\n' "$2" > "$(nvattr "$1" current_vgpu_type)"
}

# gpu_state PF KEY: one value of the simulator's "gpu PF ..." state line.
gpu_state() {
        awk -v pf="$1" -v key="$2" '$1 == "gpu" && $2 == pf {
                for (i = 3; i <= NF; i++) if (index($i, key "=") == 1) print substr($i, length(key) + 2) }' \
                "$SIM_SYS/.sim/state"
}

@test "sim: equal-size mode collapses every VF's creatable list to the first vGPU's size" {
        "$SRIOV_MANAGE" -e "$PF1"
        program "$(vf "$PF1" 0)" "$T4"
        run creatable "$(vf "$PF1" 1)"
        [ "$status" -eq 0 ]
        [[ "$output" == *"$T4"* ]]
        [[ "$output" != *"$T8"* ]]
        run program "$(vf "$PF1" 1)" "$T8"
        [ "$status" -ne 0 ]
}

@test "sim: mixed-size mode lets one GPU hold vGPUs of different sizes" {
        "$SRIOV_MANAGE" -e "$PF1"
        "$NVIDIA_SMI" vgpu -i "$PF1" -shm 1
        program "$(vf "$PF1" 0)" "$T4"
        program "$(vf "$PF1" 1)" "$T8"
        [ "$(cat "$(nvattr "$(vf "$PF1" 1)" current_vgpu_type)")" = "$T8" ]
}

@test "sim: sriov-manage -e wipes a heterogeneous mode set before it" {
        "$NVIDIA_SMI" vgpu -i "$PF1" -shm 1
        [ "$(gpu_state "$PF1" het)" = 1 ]
        "$SRIOV_MANAGE" -e "$PF1"
        [ "$(gpu_state "$PF1" het)" = 0 ]
        run "$NVIDIA_SMI" -q -i "$PF1"
        [[ "$output" == *"vGPU Heterogeneous Mode               : Disabled"* ]]
}

@test "sim: -shm 1 is refused while a vGPU exists (exit 19, in use)" {
        "$SRIOV_MANAGE" -e "$PF1"
        program "$(vf "$PF1" 0)" "$T4"
        run "$NVIDIA_SMI" vgpu -i "$PF1" -shm 1
        [ "$status" -eq 19 ]
        [[ "$output" == *"In use by another client"* ]]
        [ "$(gpu_state "$PF1" het)" = 0 ]
}

@test "sim: an unknown GPU is exit 6" {
        run "$NVIDIA_SMI" vgpu -i 0000:99:00.0 -shm 1
        [ "$status" -eq 6 ]
}

@test "sim: with MIG on and no GPU instance nothing is creatable and a write fails with EIO" {
        "$NVIDIA_SMI" -i "$PF2" -mig 1
        "$SRIOV_MANAGE" -e "$PF2"
        run creatable "$(vf "$PF2" 0)"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(write_errno "$M24" "$(nvattr "$(vf "$PF2" 0)" current_vgpu_type)")" = EIO ]
}

@test "sim: sriov-manage -e wipes GPU instances made before it" {
        "$NVIDIA_SMI" -i "$PF2" -mig 1
        "$NVIDIA_SMI" mig -i "$PF2" -cgi 1g.24gb -C
        [ "$(gpu_state "$PF2" gis)" != - ]
        "$SRIOV_MANAGE" -e "$PF2"
        [ "$(gpu_state "$PF2" gis)" = - ]
        run "$NVIDIA_SMI" mig -i "$PF2" -lgi
        [ "$status" -eq 6 ]
}

@test "sim: with MIG on only MIG-backed types are creatable, and a GPU instance holds one size" {
        "$NVIDIA_SMI" -i "$PF2" -mig 1
        "$SRIOV_MANAGE" -e "$PF2"
        "$NVIDIA_SMI" mig -i "$PF2" -cgi 1g.24gb -C
        run creatable "$(vf "$PF2" 0)"
        [[ "$output" == *"$M24"* ]]
        [[ "$output" != *"$T4"* ]]
        program "$(vf "$PF2" 0)" "$M8"
        run creatable "$(vf "$PF2" 1)"
        [ "$output" = "$M8" ]
}

@test "sim: gpu_instance_id and placement_id read ENXIO until the VF has a vGPU, then say where it is" {
        "$NVIDIA_SMI" -i "$PF2" -mig 1
        "$SRIOV_MANAGE" -e "$PF2"
        run "$NVIDIA_SMI" mig -i "$PF2" -cgi 1g.24gb,1g.24gb -C
        local v
        v="$(vf "$PF2" 0)"
        run cat "$(nvattr "$v" gpu_instance_id)"
        [ "$status" -ne 0 ]
        [[ "$output" == *"No such device or address"* ]]
        program "$v" "$M24"
        program "$(vf "$PF2" 1)" "$M24"
        [ "$(cat "$(nvattr "$(vf "$PF2" 1)" gpu_instance_id)")" != "$(cat "$(nvattr "$v" gpu_instance_id)")" ]
        [[ "$(cat "$(nvattr "$v" placement_id)")" =~ ^[0-9]+$ ]]
}

@test "sim: -mig 0 is refused while VFs are enabled" {
        "$NVIDIA_SMI" -i "$PF2" -mig 1
        "$SRIOV_MANAGE" -e "$PF2"
        run "$NVIDIA_SMI" -i "$PF2" -mig 0
        [ "$status" -ne 0 ]
        [ "$(gpu_state "$PF2" mig)" = 1 ]
}

@test "sim: a held unbind lock makes sriov-manage fail with Cannot obtain unbindLock" {
        sim_ctl unbind-hold "$PF1" 1
        run "$SRIOV_MANAGE" -e "$PF1"
        [ "$status" -eq 1 ]
        [[ "$output" == *"Cannot obtain unbindLock for $PF1"* ]]
        [ "$(gpu_state "$PF1" numvfs)" = 0 ]
        "$SRIOV_MANAGE" -e "$PF1"
        [ "$(gpu_state "$PF1" numvfs)" = 16 ]
}

@test "sim: a reboot loses VFs, vGPUs, modes and GPU instances" {
        "$NVIDIA_SMI" -i "$PF2" -mig 1
        "$SRIOV_MANAGE" -e "$PF2"
        "$NVIDIA_SMI" mig -i "$PF2" -cgi 1g.24gb -C
        program "$(vf "$PF2" 0)" "$M24"
        "$SRIOV_MANAGE" -e "$PF1"
        "$NVIDIA_SMI" vgpu -i "$PF1" -shm 1
        sim_reboot
        for pf in "$PF1" "$PF2"; do
                [ "$(gpu_state "$pf" numvfs)" = 0 ]
                [ "$(gpu_state "$pf" mig)" = 0 ]
                [ "$(gpu_state "$pf" het)" = 0 ]
                [ "$(gpu_state "$pf" gis)" = - ]
        done
        [ ! -e "$SIM_SYS/bus/pci/devices/$(vf "$PF2" 0)" ]
}

# plan_conf [EXTRA...]: the config of a host with PF1 mixed-size (4Q and
# 8Q guests) and PF2 in MIG mode (two 1-slice and one 2-slice instances),
# the stand-in tools, no wait between unbind-lock retries; EXTRA lines go
# into [gpu].
plan_conf() {
        cat > "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf" <<CONF
[devices]
enabled_mdev_types = nvidia-$T4, nvidia-$T8, nvidia-$M24, nvidia-$M8

[mdev_nvidia-$T4]
device_addresses = $PF1

[mdev_nvidia-$T8]
device_addresses = $PF1

[mdev_nvidia-$M24]
device_addresses = $PF2

[mdev_nvidia-$M8]
device_addresses = $PF2

[gpu]
sriov_manage = $SRIOV_MANAGE
nvidia_smi = $NVIDIA_SMI
unbind_retry_ms = 0
$(printf '%s\n' "$@")

[gpu_$PF1]
mode = mixed

[gpu_$PF2]
mode = mig
mig_instances = 1g.24gb, 1g.24gb, 2g.48gb
CONF
}

# declared_state: both GPUs are as plan_conf declares them.
declared_state() {
        [ "$(gpu_state "$PF1" numvfs)" = 16 ]
        [ "$(gpu_state "$PF1" het)" = 1 ]
        [ "$(gpu_state "$PF1" mig)" = 0 ]
        [ "$(gpu_state "$PF2" numvfs)" = 16 ]
        [ "$(gpu_state "$PF2" mig)" = 1 ]
        [ "$(gpu_state "$PF2" gis)" = "1:1g.24gb,2:1g.24gb,3:2g.48gb" ]
}

@test "gpu plan brings a mixed-size and a MIG GPU to their declared state, in the driver's order" {
        plan_conf
        run "$MH_CLI" gpu plan
        echo "$output"
        [ "$status" -eq 0 ]
        declared_state
        # the order: MIG mode before the VFs, the instances after them
        [[ "$output" == *"$PF2: mig-on done"*"$PF2: vfs done"*"$PF2: gpu-instances done"* ]]
        [[ "$output" == *"$PF1: vfs done"*"$PF1: heterogeneous-on done"* ]]
}

@test "gpu plan a second time changes nothing" {
        plan_conf
        "$MH_CLI" gpu plan
        before="$(grep '^gpu ' "$SIM_SYS/.sim/state")"
        run "$MH_CLI" gpu plan
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 2 ]
        [ "${lines[0]}" = "$PF1: mixed: already in its declared state" ]
        [ "${lines[1]}" = "$PF2: mig: already in its declared state" ]
        [ "$(grep '^gpu ' "$SIM_SYS/.sim/state")" = "$before" ]
}

@test "after a simulated reboot gpu plan restores both GPUs" {
        plan_conf
        "$MH_CLI" gpu plan
        declared_state
        sim_reboot
        [ "$(gpu_state "$PF2" gis)" = - ]
        run "$MH_CLI" gpu plan
        [ "$status" -eq 0 ]
        declared_state
}

@test "gpu plan retries sriov-manage while the unbind lock is held, and no more than unbind_retries" {
        plan_conf "unbind_retries = 3"
        sim_ctl unbind-hold "$PF1" 3
        run "$MH_CLI" gpu plan "$PF1"
        [ "$status" -eq 0 ]
        [ "$(gpu_state "$PF1" het)" = 1 ]
        sim_reboot
        sim_ctl unbind-hold "$PF1" 4
        run "$MH_CLI" gpu plan "$PF1"
        [ "$status" -eq 1 ]
        [ "$(gpu_state "$PF1" numvfs)" = 0 ]
        [ "$(gpu_state "$PF1" unbind_busy)" = 0 ] # 4 tries: the first and 3 retries
}

@test "a lock held past the retries is one line: the step, the GPU, what the tool printed; the next run finishes" {
        plan_conf "unbind_retries = 1"
        sim_ctl unbind-hold "$PF2" 5
        run "$MH_CLI" gpu plan "$PF2"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 2 ] # mig-on done, then the failure
        [[ "${lines[1]}" == "mdev-hooks: GPU $PF2: step vfs failed: '$SRIOV_MANAGE -e $PF2' exited 1 after 2 tries: "*"Cannot obtain unbindLock for $PF2" ]]
        [ "$(gpu_state "$PF2" mig)" = 1 ] # where it stopped
        sim_ctl unbind-hold "$PF2" 0
        run "$MH_CLI" gpu plan "$PF2"
        [ "$status" -eq 0 ]
        [[ "$output" != *"mig-on done"* ]]
        [ "$(gpu_state "$PF2" gis)" = "1:1g.24gb,2:1g.24gb,3:2g.48gb" ]
}

@test "a reboot in the middle of a plan: the next run starts from what is left" {
        plan_conf "unbind_retries = 0"
        sim_ctl unbind-hold "$PF2" 1
        run "$MH_CLI" gpu plan "$PF2"
        [ "$status" -eq 1 ]
        [ "$(gpu_state "$PF2" mig)" = 1 ]
        sim_reboot
        [ "$(gpu_state "$PF2" mig)" = 0 ]
        run "$MH_CLI" gpu plan
        [ "$status" -eq 0 ]
        declared_state
}

# killing_tools K: wrappers of the stand-ins in $KILL_DIR that count every
# call of either tool and, on the K-th, SIGKILL the plan that ran it (the
# mdev-hooks process above it) once the tool is done: the plan dies after a step took effect and before it read
# the step back (or after a read, when the K-th call is one).
KILL_DIR=
killing_tools() {
        local t
        KILL_DIR="$BATS_TEST_TMPDIR/kill"
        mkdir -p "$KILL_DIR"
        : > "$KILL_DIR/calls"
        for t in sriov-manage nvidia-smi; do
                cat > "$KILL_DIR/$t" <<TOOL
#!/bin/bash
"$MH_SOURCE_DIR/tests/nvidia-tools/$t" "\$@"
rc=\$?
echo "$t \$*" >> "$KILL_DIR/calls"
[ "\$(wc -l < "$KILL_DIR/calls")" -eq "$1" ] || exit \$rc
p=\$PPID # the plan, above the sh -c it runs a tool in
while [ "\$p" -gt 1 ] && [ "\$(cat /proc/\$p/comm)" != mdev-hooks ]; do p=\$(awk '{ print \$4 }' /proc/\$p/stat); done
kill -KILL "\$p"
exit \$rc
TOOL
                chmod +x "$KILL_DIR/$t"
        done
}

@test "a plan killed after any of its tool calls: the next run finishes the declared state" {
        local calls k
        killing_tools 0
        SRIOV_MANAGE="$KILL_DIR/sriov-manage" NVIDIA_SMI="$KILL_DIR/nvidia-smi" plan_conf
        run "$MH_CLI" gpu plan
        [ "$status" -eq 0 ]
        declared_state
        calls="$(wc -l < "$KILL_DIR/calls")"
        [ "$calls" -ge 6 ] # MIG mode, two sriov-manage -e, -shm 1, the GPU instances, and reads
        for k in $(seq 1 "$calls"); do
                sim_reboot
                killing_tools "$k"
                run "$MH_CLI" gpu plan
                echo "killed after call $k ($(tail -n 1 "$KILL_DIR/calls")): status $status"
                [ "$status" -eq 137 ]
                killing_tools 0 # the next run, to the end
                run "$MH_CLI" gpu plan
                echo "$output"
                [ "$status" -eq 0 ]
                declared_state
                run "$MH_CLI" gpu plan
                [ "$status" -eq 0 ]
                [[ "$output" == *"$PF1: mixed: already in its declared state"* ]]
                [[ "$output" == *"$PF2: mig: already in its declared state"* ]]
        done
}

@test "gpu plan reports -mig 0 refused with VFs on in one line" {
        plan_conf
        "$NVIDIA_SMI" -i "$PF1" -mig 1
        "$SRIOV_MANAGE" -e "$PF1"
        run "$MH_CLI" gpu plan "$PF1"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "${lines[0]}" == "mdev-hooks: GPU $PF1: step mig-off failed: '$NVIDIA_SMI -mig 0 -i $PF1' exited 19 after 1 try: "*"In use by another client" ]]
}

@test "gpu plan PF refuses a PF without a [gpu_PF] section" {
        plan_conf
        run "$MH_CLI" gpu plan 0000:99:00.0
        [ "$status" -eq 1 ]
        [[ "$output" == *"'0000:99:00.0' has no [gpu_0000:99:00.0] section"* ]]
        [ "$(gpu_state "$PF1" numvfs)" = 0 ]
}

@test "gpu status shows each GPU's declared and actual state and the steps a plan would take" {
        plan_conf
        run "$MH_CLI" gpu status --json
        [ "$status" -eq 0 ]
        [ "$(jq -r '.gpus[1].pending_steps | join(",")' <<< "$output")" = "mig-on,vfs,gpu-instances" ]
        [ "$(jq -r '.gpus[0].declared_mode' <<< "$output")" = mixed ]
        "$MH_CLI" gpu plan
        run "$MH_CLI" gpu status --json
        [ "$(jq -r '[.gpus[].pending_steps | length] | add' <<< "$output")" = 0 ]
        [ "$(jq -r '.gpus[1].gpu_instances | join(",")' <<< "$output")" = "1g.24gb,1g.24gb,2g.48gb" ]
        [ "$(jq -r '.gpus[0].heterogeneous' <<< "$output")" = true ]
        run "$MH_CLI" gpu status
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == GPU*DECLARED*MIG*HETEROGENEOUS*VFS*GPU-INSTANCES*PENDING ]]
        [[ "${lines[2]}" == "$PF2"*mig*on*n/a*16*1g.24gb,1g.24gb,2g.48gb*none ]]
}

@test "the udev rule wants mdev-hooks-gpu@PF.service for an NVIDIA PF, and still runs the helper" {
        command -v udevadm > /dev/null || skip "udevadm is not installed"
        unshare -m true 2> /dev/null || skip "cannot make a mount namespace here"
        [ -z "${MH_PREFIX:-}" ] || skip "reads the rules of the build tree"
        rule_wants /devices/pci0000:40/0000:40:01.0/0000:41:00.0 0x10de "" 16
        [ "$status" -eq 0 ]
        ! grep -E '^/run/udev/rules.d/60-mdev-hooks.rules:[0-9]+' <<< "$output" || false
        [[ "$output" == *"SYSTEMD_WANTS=mdev-hooks-gpu@0000:41:00.0.service"* ]]
        [[ "$output" == *"mdev-hooks-udev 0000:41:00.0"* ]]
        rm -rf "$BATS_TEST_TMPDIR/fakesys"
        rule_wants /devices/pci0000:40/0000:40:01.0/0000:42:00.0 0x1002 "" 16
        [[ "$output" != *"SYSTEMD_WANTS"* ]]
}

@test "the service's gpu plan --if-declared does nothing for a PF without [gpu_PF]" {
        plan_conf
        run "$MH_CLI" gpu plan --if-declared 0000:99:00.0
        [ "$status" -eq 0 ]
        [ "$(gpu_state "$PF1" numvfs)" = 0 ]
        [ "$(gpu_state "$PF2" numvfs)" = 0 ]
        run "$MH_CLI" gpu plan --if-declared "$PF1"
        [ "$status" -eq 0 ]
        [ "$(gpu_state "$PF1" het)" = 1 ]
        [ "$(gpu_state "$PF2" numvfs)" = 0 ]
}

@test "the unit runs the plan for its instance, as a oneshot" {
        local unit="$MH_BUILD_DIR/systemd/mdev-hooks-gpu@.service"
        [ -z "${MH_PREFIX:-}" ] || unit="$(find "$MH_PREFIX" -name 'mdev-hooks-gpu@.service' | head -n1)"
        grep -qx 'Type=oneshot' "$unit"
        grep -qE '^ExecStart=/.*/mdev-hooks gpu plan --if-declared %I$' "$unit"
}

# complete WORD...: bash completion of the built CLI (as completion.bats
# runs it); prints the candidates, sorted.
complete_words() {
        local bc=""
        for f in /usr/share/bash-completion/bash_completion /etc/bash_completion; do
                [ -f "$f" ] && bc="$f" && break
        done
        [ -n "$bc" ] || skip "bash-completion is not installed (apt-get install bash-completion)"
        bash --norc --noprofile -c '
                source "$1" || exit 1
                source "$2" || exit 1
                shift 2
                COMP_WORDS=("$@")
                COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
                COMP_LINE="${COMP_WORDS[*]}"
                COMP_POINT=${#COMP_LINE}
                _mdev_hooks "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                printf "%s\n" "${COMPREPLY[@]}" | sort
        ' completion "$bc" "$MH_SOURCE_DIR/shell-completion/bash/mdev-hooks" "$MH_CLI" "$@"
}

@test "completion: gpu completes to plan and status, gpu plan to the PFs with [gpu_PF]" {
        plan_conf
        run complete_words gpu ""
        [ "$output" = "$(printf 'plan\nstatus')" ]
        run complete_words gpu plan ""
        [ "$output" = "$(printf '%s\n%s' "$PF1" "$PF2")" ]
        run complete_words gpu plan --if
        [ "$output" = --if-declared ]
}

# vgpu_xml NAME VF TYPE: a guest with one vGPU on VF, as vfio.bats's guests.
vgpu_xml() {
        local vf="$2"
        printf "<domain type='kvm'>\n  <name>%s</name>\n  <uuid>%s</uuid>\n" "$1" \
                "$(printf '%s' "$1" | md5sum | sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12}).*/\1-\2-4\3-8\4-\5/')"
        printf "  <metadata>\n    <mh:mdevs xmlns:mh=\"http://mdev-hooks.org/xmlns/domain/1.0\">\n"
        printf "      <mh:vgpu pci=\"%s\" type=\"%s\"/>\n    </mh:mdevs>\n  </metadata>\n  <devices>\n" "$vf" "$3"
        printf "    <hostdev mode='subsystem' type='pci' managed='no'>\n      <source>\n"
        printf "        <address domain='0x%s' bus='0x%s' slot='0x%s' function='0x%s'/>\n" \
                "${vf:0:4}" "${vf:5:2}" "${vf:8:2}" "${vf:11:1}"
        printf "      </source>\n    </hostdev>\n  </devices>\n</domain>\n"
}

# vstart NAME VF TYPE / vstop NAME: prepare and release as libvirt runs them.
vstart() {
        vgpu_xml "$@" > "$BATS_TEST_TMPDIR/$1.xml"
        "$MH_QEMU_HOOK" "$1" prepare begin - < "$BATS_TEST_TMPDIR/$1.xml"
}
vstop() {
        "$MH_QEMU_HOOK" "$1" release end destroyed < "$BATS_TEST_TMPDIR/$1.xml"
}

@test "mixed-size GPU: guests of 4Q and 8Q start on one GPU and stop" {
        plan_conf
        "$MH_CLI" gpu plan "$PF1"
        run vstart g4 "$(vf "$PF1" 0)" "nvidia-$T4"
        [ "$status" -eq 0 ]
        run vstart g8 "$(vf "$PF1" 1)" "nvidia-$T8"
        [ "$status" -eq 0 ]
        [ "$(cat "$(nvattr "$(vf "$PF1" 1)" current_vgpu_type)")" = "$T8" ]
        [ "$(record_get "$(vf "$PF1" 1)" state)" = assigned ]
        vstop g8
        vstop g4
        [ "$(cat "$(nvattr "$(vf "$PF1" 0)" current_vgpu_type)")" = 0 ]
}

@test "equal-size GPU: an 8Q guest is refused once a 4Q guest runs" {
        plan_conf
        "$SRIOV_MANAGE" -e "$PF1" # VFs, but not the declared mixed mode
        vstart g4 "$(vf "$PF1" 0)" "nvidia-$T4"
        run vstart g8 "$(vf "$PF1" 1)" "nvidia-$T8"
        [ "$status" -ne 0 ]
        [ "${#lines[@]}" -eq 1 ]
        [ "$(cat "$(nvattr "$(vf "$PF1" 1)" current_vgpu_type)")" = 0 ]
}

@test "MIG GPU: a MIG-backed guest starts in a GPU instance and stops" {
        plan_conf
        "$MH_CLI" gpu plan "$PF2"
        run vstart m1 "$(vf "$PF2" 0)" "nvidia-$M24"
        [ "$status" -eq 0 ]
        [ "$(cat "$(nvattr "$(vf "$PF2" 0)" gpu_instance_id)")" -ge 1 ]
        [ "$(record_get "$(vf "$PF2" 0)" state)" = assigned ]
        vstop m1
        [ "$(cat "$(nvattr "$(vf "$PF2" 0)" current_vgpu_type)")" = 0 ]
}

@test "prepare in MIG mode records the VF's gpu_instance_id and placement_id read back" {
        plan_conf
        "$MH_CLI" gpu plan "$PF2"
        vstart m1 "$(vf "$PF2" 0)" "nvidia-$M8"
        vstart m2 "$(vf "$PF2" 1)" "nvidia-$M8"
        for i in 0 1; do
                v="$(vf "$PF2" $i)"
                [ "$(record_get "$v" gpu_instance_id)" = "$(cat "$(nvattr "$v" gpu_instance_id)")" ]
                [ "$(record_get "$v" placement_id)" = "$(cat "$(nvattr "$v" placement_id)")" ]
        done
        # two DC-1-8Q share one instance, in two places
        [ "$(record_get "$(vf "$PF2" 0)" gpu_instance_id)" = "$(record_get "$(vf "$PF2" 1)" gpu_instance_id)" ]
        [ "$(record_get "$(vf "$PF2" 0)" placement_id)" != "$(record_get "$(vf "$PF2" 1)" placement_id)" ]
        "$MH_CLI" list --json | jq -e '.mdevs | length == 2'
}

@test "a MIG vGPU's record lost after a reboot drops its GPU instance; its next start records the new one" {
        plan_conf
        "$MH_CLI" gpu plan "$PF2"
        vstart x "$(vf "$PF2" 0)" "nvidia-$M24" # the first 1-slice instance
        vstart m1 "$(vf "$PF2" 1)" "nvidia-$M8" # the second
        v="$(vf "$PF2" 1)"
        before="$(record_get "$v" gpu_instance_id)"
        [ -n "$before" ]
        sim_reboot
        "$MH_CLI" gpu plan "$PF2" > /dev/null
        # the VF is back, empty: udev's event for it
        run env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION=bind SUBSYSTEM=pci \
                DEVPATH="/devices/pci0000:00/$v" SEQNUM=1 "$MH_UDEV" "$v"
        [ "$status" -eq 0 ]
        [ "$(record_get "$v" state)" = lost ]
        run grep -E '^(gpu_instance_id|placement_id) ' "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$v"
        [ "$status" -eq 1 ]
        # started first now, it goes to the first instance
        vstart m1 "$v" "nvidia-$M8"
        [ "$(record_get "$v" state)" = assigned ]
        [ "$(record_get "$v" gpu_instance_id)" = "$(cat "$(nvattr "$v" gpu_instance_id)")" ]
        [ "$(record_get "$v" placement_id)" = "$(cat "$(nvattr "$v" placement_id)")" ]
        [ "$(record_get "$v" gpu_instance_id)" != "$before" ]
}

@test "a MIG vGPU the guest borrows, or reuses kept free, is recorded with where the driver put it" {
        plan_conf
        printf '[hooks]\nrelease = keep\n' >> "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        "$MH_CLI" gpu plan "$PF2" > /dev/null
        v="$(vf "$PF2" 3)"
        program "$v" "$M8" # an operator's vGPU, not mdev-hooks'
        vstart m1 "$v" "nvidia-$M8"
        [ "$(record_get "$v" origin)" = borrowed ]
        [ "$(record_get "$v" gpu_instance_id)" = "$(cat "$(nvattr "$v" gpu_instance_id)")" ]
        [ "$(record_get "$v" placement_id)" = "$(cat "$(nvattr "$v" placement_id)")" ]
        w="$(vf "$PF2" 4)"
        vstart m2 "$w" "nvidia-$M8"
        vstop m2
        [ "$(record_get "$w" state)" = free ]
        vstart m3 "$w" "nvidia-$M8" # kept free: reused, not programmed again
        [ "$(record_get "$w" guest)" = m3 ]
        [ "$(record_get "$w" gpu_instance_id)" = "$(cat "$(nvattr "$w" gpu_instance_id)")" ]
        [ "$(record_get "$w" placement_id)" = "$(cat "$(nvattr "$w" placement_id)")" ]
}

@test "a mixed-size GPU's records keep their old form (no placement keys)" {
        plan_conf
        "$MH_CLI" gpu plan "$PF1"
        vstart g4 "$(vf "$PF1" 0)" "nvidia-$T4"
        ! grep -q placement_id "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$(vf "$PF1" 0)"
}

# two_planned_hosts: hosts A and B, both nvidia-modes with plan_conf and
# their plans run; A is current. T holds the guests' XML.
two_planned_hosts() {
        A="$BATS_TEST_TMPDIR/a" B="$BATS_TEST_TMPDIR/b" T="$BATS_TEST_TMPDIR"
        for h in "$B" "$A"; do
                sim_mount nvidia-modes "$h"
                plan_conf
                "$MH_CLI" gpu plan > /dev/null
        done
}

@test "migrate: an 8Q guest goes to a mixed-size GPU that holds a 4Q guest, and starts there" {
        two_planned_hosts
        vstart g8 "$(vf "$PF1" 0)" "nvidia-$T8"
        sim_use "$B"
        vstart other "$(vf "$PF1" 0)" "nvidia-$T4"
        run --separate-stderr "$MH_QEMU_HOOK" g8 migrate begin - < "$T/g8.xml"
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" > "$T/g8.b.xml"
        dest="$(vf "$PF1" 1)"
        grep -q "pci=\"$dest\"" "$T/g8.b.xml"
        [ "$(cat "$(nvattr "$dest" current_vgpu_type)")" = "$T8" ]
        [ "$(record_get "$dest" state)" = incoming ]
        run "$MH_QEMU_HOOK" g8 prepare begin - < "$T/g8.b.xml"
        [ "$status" -eq 0 ]
        [ "$(record_get "$dest" state)" = assigned ]
}

@test "restore: a MIG-backed guest comes back in a GPU instance with room" {
        two_planned_hosts
        vstart m1 "$(vf "$PF2" 0)" "nvidia-$M24"
        sim_use "$B"
        vstart a "$(vf "$PF2" 0)" "nvidia-$M24"
        run --separate-stderr "$MH_QEMU_HOOK" m1 restore begin - < "$T/m1.xml"
        echo "$stderr"
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" > "$T/m1.b.xml"
        dest="$(sed -n 's/.*pci="\([^"]*\)".*/\1/p' "$T/m1.b.xml")"
        [[ "$dest" == 0000:c1:* ]]
        [ "$(cat "$(nvattr "$dest" current_vgpu_type)")" = "$M24" ]
        [ "$(cat "$(nvattr "$dest" gpu_instance_id)")" != "$(cat "$(nvattr "$(vf "$PF2" 0)" gpu_instance_id)")" ]
        # both 1-slice instances are taken now: a third DC-1-24Q is refused
        run vstart c "$(vf "$PF2" 5)" "nvidia-$M24"
        [ "$status" -ne 0 ]
        [ "$(cat "$(nvattr "$(vf "$PF2" 5)" current_vgpu_type)")" = 0 ]
}

# status_free PF TYPE-ID: how many more vGPUs of the type gpu status says fit
# on PF now (absent from its offers: 0).
status_free() {
        "$MH_CLI" gpu status --json |
                jq -r --arg pf "$1" --arg t "nvidia-$2" \
                        '[.gpus[] | select(.address == $pf) | .offers[] | select(.type == $t) | .free] | add // 0'
}

# fill PF TYPE-ID: programs the type on the PF's free VFs until the driver
# refuses; prints how many it made.
fill() {
        local made=0 i
        for ((i = 0; i < 16; i++)); do
                [ "$(cat "$(nvattr "$(vf "$1" $i)" current_vgpu_type)")" = 0 ] || continue
                program "$(vf "$1" $i)" "$2" 2> /dev/null || break
                made=$((made + 1))
        done
        echo "$made"
}

# free_is_what_fits PF TYPE-ID: gpu status's count equals what the
# simulated driver then lets a caller create, and it is not 0.
free_is_what_fits() {
        local said made
        said="$(status_free "$1" "$2")"
        made="$(fill "$1" "$2")"
        echo "type $2 on $1: gpu status said $said, the driver took $made"
        [ "$said" -gt 0 ]
        [ "$said" = "$made" ]
}

@test "capacity, equal-size: what gpu status says fits is what the driver takes, by the size the first vGPU fixed" {
        plan_conf
        "$SRIOV_MANAGE" -e "$PF1"
        program "$(vf "$PF1" 0)" "$T8"
        [ "$(status_free "$PF1" "$T4")" = 0 ]
        free_is_what_fits "$PF1" "$T8"
        run program "$(vf "$PF1" 15)" "$T4"
        [ "$status" -ne 0 ]
}

@test "capacity, mixed-size: what fits is the framebuffer left" {
        plan_conf
        "$MH_CLI" gpu plan "$PF1"
        program "$(vf "$PF1" 0)" 1203 # DC-24Q
        program "$(vf "$PF1" 1)" "$T4"
        free_is_what_fits "$PF1" "$T8"
        free_is_what_fits "$PF1" "$T4"
}

@test "capacity, MIG: what fits is the GPU instances of the type's slices and how many of its size each holds" {
        plan_conf
        "$MH_CLI" gpu plan "$PF2"
        program "$(vf "$PF2" 0)" "$M8"
        [ "$(status_free "$PF2" "$T4")" = 0 ]
        free_is_what_fits "$PF2" "$M8"
        free_is_what_fits "$PF2" 1311 # DC-2-48Q
}

@test "check-config: a declared GPU that cannot run its mode, or is not here, is named with its line" {
        sed -e 's/ mig=1 heterogeneous=1 slices=4$//' "$MH_SOURCE_DIR/tests/sim/topologies/nvidia-modes.conf" > "$BATS_TEST_TMPDIR/plain.conf"
        sim_umount
        sim_mount "$BATS_TEST_TMPDIR/plain.conf"
        plan_conf
        printf '[gpu_0000:99:00.0]\nmode = mixed\n' >> "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run "$MH_CLI" check-config
        echo "$output"
        [ "$status" -eq 2 ]
        [[ "$output" == *"mdev-hooks.conf:22: [gpu_$PF1] has mode = mixed, but nvidia-smi -q does not say 'Heterogeneous Time-Slice Sizes : Supported' for it"* ]]
        [[ "$output" == *"mdev-hooks.conf:25: [gpu_$PF2] has mode = mig, but nvidia-smi -q shows no MIG mode for it"* ]]
        [[ "$output" == *"mdev-hooks.conf:28: [gpu_0000:99:00.0] is not a PCI device on this host"* ]]
        # before its plan ran, a declared GPU has no VFs: the plan makes them
        [[ "$output" == *"mdev-hooks.conf:4: '$PF1' in device_addresses of nvidia-$T4 has no VFs yet: its boot plan makes them (mdev-hooks gpu plan $PF1)"* ]]
}

@test "check-config: GPUs that can run their declared modes pass" {
        plan_conf
        "$MH_CLI" gpu plan > /dev/null
        run "$MH_CLI" check-config
        echo "$output"
        [ "$status" -eq 0 ]
}

@test "recreate = eager: after a reboot the plan programs the guests' VFs again, and the guests start on them" {
        plan_conf
        printf '[hooks]\nrecreate = eager\n' >> "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        "$MH_CLI" gpu plan > /dev/null
        vstart g8 "$(vf "$PF1" 1)" "nvidia-$T8"
        vstart m1 "$(vf "$PF2" 2)" "nvidia-$M8"
        sim_reboot
        run "$MH_CLI" gpu plan
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"$PF1: programmed 1 guest VF again (recreate = eager)"* ]]
        [[ "$output" == *"$PF2: programmed 1 guest VF again (recreate = eager)"* ]]
        [ "$(cat "$(nvattr "$(vf "$PF1" 1)" current_vgpu_type)")" = "$T8" ]
        [ "$(cat "$(nvattr "$(vf "$PF2" 2)" current_vgpu_type)")" = "$M8" ]
        [ "$(record_get "$(vf "$PF2" 2)" gpu_instance_id)" = "$(cat "$(nvattr "$(vf "$PF2" 2)" gpu_instance_id)")" ]
        [ "$(record_get "$(vf "$PF1" 1)" boot_id)" = "$(boot_id)" ]
        [ "$(record_get "$(vf "$PF1" 1)" state)" = assigned ]
        run vstart g8 "$(vf "$PF1" 1)" "nvidia-$T8"
        [ "$status" -eq 0 ]
        [ "$(record_get "$(vf "$PF1" 1)" origin)" = created ]
        # a second plan makes nothing again
        run "$MH_CLI" gpu plan
        [[ "$output" != *"again"* ]]
}

@test "recreate = lazy (the default): the plan leaves the guests' VFs for their next start" {
        plan_conf
        "$MH_CLI" gpu plan > /dev/null
        vstart g8 "$(vf "$PF1" 1)" "nvidia-$T8"
        sim_reboot
        "$MH_CLI" gpu plan
        [ "$(cat "$(nvattr "$(vf "$PF1" 1)" current_vgpu_type)")" = 0 ]
}

# inv PF TYPE-ID FIELD: one number of inventory's row for the PF and the type.
inv() {
        "$MH_CLI" inventory --json |
                jq -r --arg pf "$1" --arg t "nvidia-$2" --arg f "$3" \
                        '.parents[] | select(.parent == $pf and .type == $t) | .[$f]'
}

# inventory_free PF TYPE-ID: inventory's free count for that type on the PF.
inventory_free() {
        inv "$1" "$2" free
}

@test "inventory counts what fits by the GPU's mode, and the driver then takes exactly that" {
        plan_conf
        "$MH_CLI" gpu plan > /dev/null
        # mixed: two 24 GiB and one 8 GiB vGPU leave 40 GiB: ten 4Q
        program "$(vf "$PF1" 0)" 1203
        program "$(vf "$PF1" 1)" 1203
        program "$(vf "$PF1" 2)" "$T8"
        said="$(inventory_free "$PF1" "$T4")"
        made="$(fill "$PF1" "$T4")"
        echo "mixed: inventory said $said free, the driver took $made"
        [ "$said" -gt 0 ]
        [ "$said" = "$made" ]
        # MIG: DC-1-24Q, one per 1-slice instance
        said="$(inventory_free "$PF2" "$M24")"
        made="$(fill "$PF2" "$M24")"
        echo "MIG: inventory said $said free, the driver took $made"
        [ "$said" -gt 0 ]
        [ "$said" = "$made" ]
        [ "$(inventory_free "$PF2" "$M24")" = 0 ]
}

# hook_fill PF TYPE-ID: starts a guest of the type on each free VF of the
# PF, through the hook, until the hook refuses one; prints how many started
# and the VF it refused ("-": none). The guests' names go to
# $BATS_TEST_TMPDIR/filled, for hook_unfill.
hook_fill() {
        local made=0 i v refused=-
        for ((i = 0; i < 16; i++)); do
                v="$(vf "$1" $i)"
                [ "$(cat "$(nvattr "$v" current_vgpu_type)")" = 0 ] || continue
                if ! vstart "f$2-$i" "$v" "nvidia-$2" > /dev/null 2>&1; then
                        refused="$v"
                        break
                fi
                echo "f$2-$i" >> "$BATS_TEST_TMPDIR/filled"
                made=$((made + 1))
        done
        echo "$made $refused"
}

# hook_unfill: stops the guests hook_fill started.
hook_unfill() {
        local g
        while read -r g; do
                vstop "$g"
        done < "$BATS_TEST_TMPDIR/filled"
        rm -f "$BATS_TEST_TMPDIR/filled"
}

# inventory_is_what_the_hook_makes PF TYPE-ID: for one of the PF's types,
# inventory's free count is what the hook then starts before it is refused,
# the driver takes no more of it either, and the type's total is what it
# held plus what started. Stops those guests again and checks that the
# inventory is back where it was.
inventory_is_what_the_hook_makes() {
        local before said used total made refused
        before="$("$MH_CLI" inventory --json)"
        said="$(inventory_free "$1" "$2")"
        used="$(inv "$1" "$2" used)"
        total="$(inv "$1" "$2" total)"
        read -r made refused < <(hook_fill "$1" "$2")
        echo "type $2 on $1: inventory said $said free of $total ($used used), the hook started $made, refused on $refused"
        [ "$said" -gt 0 ]
        [ "$said" = "$made" ]
        [ "$total" = $((used + made)) ]
        if [ "$refused" != - ]; then
                run program "$refused" "$2"
                [ "$status" -ne 0 ]
        fi
        [ "$(inventory_free "$1" "$2")" = 0 ]
        hook_unfill
        [ "$("$MH_CLI" inventory --json)" = "$before" ]
}

@test "inventory has a row for each type of a mixed-size and of a MIG GPU, counted by what fits of it now" {
        plan_conf
        "$MH_CLI" gpu plan > /dev/null
        program "$(vf "$PF1" 0)" 1203 # 24 GiB of 96 used: 72 left
        program "$(vf "$PF1" 1)" "$T8" # 64 left
        program "$(vf "$PF2" 0)" "$M8" # one 1-slice instance holds 8 GiB vGPUs now
        run "$MH_CLI" inventory --json
        [ "$status" -eq 0 ]
        # each configured type of each GPU once, and nothing else on them
        [ "$(jq -r --arg a "$PF1" --arg b "$PF2" '[.parents[] | select(.parent == $a or .parent == $b) | "\(.parent) \(.type)"] | join(",")' <<< "$output")" = \
                "$PF1 nvidia-$T4,$PF1 nvidia-$T8,$PF2 nvidia-$M24,$PF2 nvidia-$M8" ]
        # mixed: the framebuffer left, by each type's size (VFs: 14 free)
        [ "$(inv "$PF1" "$T4" free)" = 14 ]
        [ "$(inv "$PF1" "$T4" used)" = 0 ]
        [ "$(inv "$PF1" "$T8" free)" = 8 ]
        [ "$(inv "$PF1" "$T8" used)" = 1 ]
        [ "$(inv "$PF1" "$T8" total)" = 9 ]
        # MIG: the empty 1-slice instance takes one 24 GiB vGPU; the 8 GiB
        # type has two more in the instance that holds it and three in the empty one
        [ "$(inv "$PF2" "$M24" free)" = 1 ]
        [ "$(inv "$PF2" "$M8" free)" = 5 ]
        [ "$(inv "$PF2" "$M8" total)" = 6 ]
        # the text has the same rows
        run "$MH_CLI" inventory
        [ "$(grep -c "^$PF1 " <<< "$output")" = 2 ]
        [ "$(grep -c "^$PF2 " <<< "$output")" = 2 ]
}

@test "mixed-size GPU: for each of its types, the inventory's count is what the hook then starts until refused" {
        plan_conf
        "$MH_CLI" gpu plan > /dev/null
        # two 24 GiB and one 8 GiB vGPU leave 40 GiB
        program "$(vf "$PF1" 0)" 1203
        program "$(vf "$PF1" 1)" 1203
        program "$(vf "$PF1" 2)" "$T8"
        inventory_is_what_the_hook_makes "$PF1" "$T4"
        inventory_is_what_the_hook_makes "$PF1" "$T8"
}

@test "MIG GPU: for each of its types, the inventory's count is what the hook then starts until refused" {
        plan_conf
        "$MH_CLI" gpu plan > /dev/null
        program "$(vf "$PF2" 0)" "$M8"
        inventory_is_what_the_hook_makes "$PF2" "$M24"
        inventory_is_what_the_hook_makes "$PF2" "$M8"
}

@test "inventory --placement gives a GPU listed under several types a provider per type, with its type's numbers" {
        plan_conf
        "$MH_CLI" gpu plan > /dev/null
        program "$(vf "$PF1" 0)" "$T8"
        run "$MH_CLI" inventory --placement --hostname h1
        [ "$status" -eq 0 ]
        providers="$output"
        [ "$(jq -r '[.resource_providers[].name] | join(",")' <<< "$providers")" = \
                "h1_pci_0000_41_00_0_nvidia-$T4,h1_pci_0000_41_00_0_nvidia-$T8,h1_pci_0000_c1_00_0_nvidia-$M24,h1_pci_0000_c1_00_0_nvidia-$M8" ]
        for row in "$PF1 $T4" "$PF1 $T8" "$PF2 $M24" "$PF2 $M8"; do
                read -r pf t <<< "$row"
                name="h1_pci_$(tr ':.' '__' <<< "$pf")_nvidia-$t"
                rp="$(jq -c --arg n "$name" '.resource_providers[] | select(.name == $n)' <<< "$providers")"
                [ "$(jq -r .inventories.VGPU.total <<< "$rp")" = "$(inv "$pf" "$t" total)" ]
                [ "$(jq -r .usages.VGPU <<< "$rp")" = "$(inv "$pf" "$t" used)" ]
                [ "$(jq -r '.traits | join(",")' <<< "$rp")" = "CUSTOM_MDEV_NVIDIA_$t" ]
        done
        [ "$(jq -r --arg n "h1_pci_0000_41_00_0_nvidia-$T8" '.resource_providers[] | select(.name == $n) | .usages.VGPU' <<< "$providers")" = 1 ]
}

@test "metrics has a series per type of a mixed-size and a MIG GPU, as inventory counts them, and counts each GPU once" {
        plan_conf
        "$MH_CLI" gpu plan > /dev/null
        program "$(vf "$PF1" 0)" "$T8"
        program "$(vf "$PF2" 0)" "$M8"
        run "$MH_CLI" metrics
        [ "$status" -eq 0 ]
        for row in "$PF1 $T4" "$PF1 $T8" "$PF2 $M24" "$PF2 $M8"; do
                read -r pf t <<< "$row"
                for m in capacity:total used:used free:free; do
                        series="mdev_hooks_parent_${m%%:*}_vgpus{class=\"VGPU\",parent=\"$pf\",type=\"nvidia-$t\"}"
                        [ "$(grep -cF "$series " <<< "$output")" = 1 ]
                        [ "$(grep -F "$series " <<< "$output" | cut -d' ' -f2)" = "$(inv "$pf" "$t" "${m#*:}")" ]
                done
        done
        [ "$(grep -c "^mdev_hooks_parent_free_vgpus{.*parent=\"$PF1\"" <<< "$output")" = 2 ]
        [ "$(grep '^mdev_hooks_parents_registered ' <<< "$output" | cut -d' ' -f2)" = \
                "$("$MH_CLI" inventory --json | jq '[.parents[].parent] | unique | length')" ]
        [ "$(grep '^mdev_hooks_parents_registered ' <<< "$output" | cut -d' ' -f2)" = 2 ]
}
