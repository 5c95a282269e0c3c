#!/usr/bin/env bats
# The sysfs simulator itself (tests/sim/): each behaviour of the kernel's mdev
# sysfs that it reproduces, its faults, counters and helpers.

load common
load ../sim/sim

U1=11111111-2222-4333-8444-555555555501
U2=11111111-2222-4333-8444-555555555502
U3=11111111-2222-4333-8444-555555555503

# No simulator of this test is still mounted (other tests may run at once).
no_mount_left() {
        ! grep -q " $BATS_TEST_TMPDIR/" /proc/self/mounts
}

M60=0000:84:00.0
M60B=0000:85:00.0

# ---------------------------------------------------------------- topologies

@test "mtty.conf mounts and unmounts" {
        sim_mount mtty
        [ -L "$SIM_SYS/class/mdev_bus/mtty" ]
        sim_umount
        no_mount_left
        [ -z "$(ls -A "$MDEV_HOOKS_ROOT/sys")" ]
}

@test "nvidia-timesliced.conf mounts and unmounts" {
        sim_mount nvidia-timesliced
        [ "$(ls "$SIM_SYS/class/mdev_bus")" = "$(printf '%s\n' 0000:84:00.0 0000:85:00.0 0000:86:00.0 0000:87:00.0)" ]
        [ "$(ls "$SIM_SYS/class/mdev_bus/$M60/mdev_supported_types" | wc -l)" -eq 11 ]
        sim_umount
        no_mount_left
}

@test "nvidia-sriov.conf mounts and unmounts" {
        sim_mount nvidia-sriov
        [ "$(ls "$SIM_SYS/class/mdev_bus" | wc -l)" -eq 32 ]
        sim_umount
        no_mount_left
}

@test "nvidia-sriov-disabled.conf mounts with no VF and unmounts" {
        sim_mount nvidia-sriov-disabled
        [ -z "$(ls "$SIM_SYS/class/mdev_bus")" ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:3b:00.0/sriov_numvfs")" = 0 ]
        sim_umount
        no_mount_left
}

@test "large.conf mounts 256 parents x 20 types and unmounts" {
        sim_mount large
        [ "$(ls "$SIM_SYS/class/mdev_bus" | wc -l)" -eq 256 ]
        [ "$(ls "$SIM_SYS/class/mdev_bus/0000:80:01.0/mdev_supported_types" | wc -l)" -eq 20 ]
        sim_umount
        no_mount_left
}

@test "a bad topology is refused before mounting" {
        printf 'parent x types=nothing\n' > "$BATS_TEST_TMPDIR/bad.conf"
        run sim_mount "$BATS_TEST_TMPDIR/bad.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"bad.conf:1:"* ]]
        no_mount_left
}

@test "sim_mount makes the root: boot_id, etc, var/lib, run, and exports MDEV_HOOKS_ROOT" {
        sim_mount mtty
        [ "$MDEV_HOOKS_ROOT" = "$BATS_TEST_TMPDIR/root" ]
        [ "$SIM_SYS" = "$BATS_TEST_TMPDIR/root/sys" ]
        [[ "$(cat "$MDEV_HOOKS_ROOT/proc/sys/kernel/random/boot_id")" =~ ^[0-9a-f-]{36}$ ]]
        [ -d "$MDEV_HOOKS_ROOT/etc/mdev-hooks" ]
        [ -d "$MDEV_HOOKS_ROOT/var/lib" ]
        [ -d "$MDEV_HOOKS_ROOT/run" ]
}

@test "sim_new_boot writes a new boot_id" {
        sim_mount mtty
        old=$(cat "$MDEV_HOOKS_ROOT/proc/sys/kernel/random/boot_id")
        sim_new_boot
        new=$(cat "$MDEV_HOOKS_ROOT/proc/sys/kernel/random/boot_id")
        [[ "$new" =~ ^[0-9a-f-]{36}$ ]]
        [ "$old" != "$new" ]
}

@test "two roots can be mounted at once and are independent" {
        sim_mount mtty "$BATS_TEST_TMPDIR/a"
        sim_mount mtty "$BATS_TEST_TMPDIR/b"
        [ "$MDEV_HOOKS_ROOT" = "$BATS_TEST_TMPDIR/b" ]
        sim_use "$BATS_TEST_TMPDIR/a"
        sim_create mtty mtty-1 "$U1"
        [ -e "$BATS_TEST_TMPDIR/a/sys/bus/mdev/devices/$U1" ]
        [ ! -e "$BATS_TEST_TMPDIR/b/sys/bus/mdev/devices/$U1" ]
        SIM_SYS=$BATS_TEST_TMPDIR/b/sys sim_unregister mtty
        [ -e "$BATS_TEST_TMPDIR/a/sys/class/mdev_bus/mtty" ]
        [ ! -e "$BATS_TEST_TMPDIR/b/sys/class/mdev_bus/mtty" ]
        sim_umount
        no_mount_left
}

# -------------------------------------------------------------------- layout

@test "class/mdev_bus links a PCI parent to devices/pci0000:00/<address>" {
        sim_mount nvidia-timesliced
        [ "$(readlink "$SIM_SYS/class/mdev_bus/$M60")" = "../../devices/pci0000:00/$M60" ]
        [ -d "$SIM_SYS/devices/pci0000:00/$M60/mdev_supported_types/nvidia-35" ]
}

@test "class/mdev_bus links mtty to devices/virtual/mtty/mtty" {
        sim_mount mtty
        [ "$(readlink "$SIM_SYS/class/mdev_bus/mtty")" = "../../devices/virtual/mtty/mtty" ]
        [ -d "$SIM_SYS/devices/virtual/mtty/mtty/mdev_supported_types/mtty-1" ]
}

@test "bus/pci/devices links each PCI parent" {
        sim_mount nvidia-timesliced
        [ "$(readlink "$SIM_SYS/bus/pci/devices/$M60")" = "../../../devices/pci0000:00/$M60" ]
        [ -d "$SIM_SYS/bus/pci/devices/$M60/" ]
}

@test "a type directory holds available_instances, device_api, create, devices, name, description" {
        sim_mount nvidia-timesliced
        t=$(sim_type_dir "$M60" nvidia-35)
        [ "$(ls "$t" | tr '\n' ' ')" = "available_instances create description device_api devices name " ]
        [ "$(cat "$t/available_instances")" = 16 ]
        [ "$(cat "$t/device_api")" = vfio-pci ]
        [ "$(cat "$t/name")" = "GRID M60-0B" ]
        [[ "$(cat "$t/description")" == *"max_instance=16"* ]]
        [ -d "$t/devices" ]
        [ -z "$(ls "$t/devices")" ]
        [ "$(stat -c %a "$t/create")" = 200 ]
        [ "$(stat -c %a "$t/available_instances")" = 444 ]
}

@test "mtty's types have a name and no description" {
        sim_mount mtty
        [ "$(cat "$(sim_type_dir mtty mtty-1)/name")" = "Single port serial" ]
        [ "$(cat "$(sim_type_dir mtty mtty-2)/name")" = "Dual port serial" ]
        [ "$(cat "$(sim_type_dir mtty mtty-2)/device_api")" = vfio-pci ]
        [ ! -e "$(sim_type_dir mtty mtty-1)/description" ]
        [ "$(sim_available mtty mtty-1)" = 24 ]
        [ "$(sim_available mtty mtty-2)" = 12 ]
}

@test "the control directory is hidden from a listing of the mount" {
        sim_mount mtty
        [ "$(ls -A "$SIM_SYS" | tr "\n" " ")" = "bus class devices " ]
        [ -e "$SIM_SYS/.sim/ctl" ]
}

# -------------------------------------------------------------------- create

@test "create makes the mdev directory and its links at once" {
        sim_mount nvidia-timesliced
        t=$(sim_type_dir "$M60" nvidia-35)
        [ "$(write_errno "$U1"$'\n' "$t/create")" = ok ]
        [ "$(readlink "$SIM_SYS/bus/mdev/devices/$U1")" = "../../../devices/pci0000:00/$M60/$U1" ]
        [ "$(readlink "$SIM_SYS/bus/mdev/devices/$U1/mdev_type")" = "../mdev_supported_types/nvidia-35" ]
        [ "$(readlink "$t/devices/$U1")" = "../../../$U1" ]
        [ -d "$SIM_SYS/devices/pci0000:00/$M60/$U1" ]
        [ "$(ls "$SIM_SYS/bus/mdev/devices/$U1/" | tr '\n' ' ')" = "mdev_type remove " ]
        [ "$(stat -c %a "$SIM_SYS/bus/mdev/devices/$U1/remove")" = 200 ]
        # the links resolve: the type seen through the mdev is the type
        [ "$(cat "$SIM_SYS/bus/mdev/devices/$U1/mdev_type/name")" = "GRID M60-0B" ]
        [ "$(readlink -f "$t/devices/$U1")" = "$(readlink -f "$SIM_SYS/bus/mdev/devices/$U1")" ]
}

@test "create takes a UUID without a trailing newline" {
        sim_mount mtty
        [ "$(write_errno "$U1" "$(sim_type_dir mtty mtty-1)/create")" = ok ]
        [ -e "$SIM_SYS/bus/mdev/devices/$U1" ]
}

@test "create takes an upper-case UUID and stores it lower case" {
        sim_mount mtty
        [ "$(write_errno "${U1^^}"$'\n' "$(sim_type_dir mtty mtty-1)/create")" = ok ]
        [ "$(sim_mdevs)" = "$U1" ]
}

@test "create refuses an invalid UUID with EINVAL" {
        sim_mount mtty
        c=$(sim_type_dir mtty mtty-1)/create
        for bad in "not-a-uuid" "${U1:0:35}" "${U1}xy" "${U1/-/x}" "g${U1:1}" "${U1:0:35}"$'\n' ""; do
                [ "$(write_errno "$bad"$'\n' "$c")" = EINVAL ]
        done
        [ -z "$(sim_mdevs)" ]
        [ "$(sim_available mtty mtty-1)" = 24 ]
}

@test "create refuses a UUID that exists on any parent or type with EEXIST" {
        sim_mount nvidia-timesliced
        sim_create "$M60" nvidia-35 "$U1"
        [ "$(write_errno "$U1"$'\n' "$(sim_type_dir "$M60" nvidia-35)/create")" = EEXIST ]
        [ "$(write_errno "${U1^^}"$'\n' "$(sim_type_dir "$M60B" nvidia-36)/create")" = EEXIST ]
        [ "$(sim_mdevs)" = "$U1" ]
}

@test "reading create fails with EACCES" {
        sim_mount mtty
        run cat "$(sim_type_dir mtty mtty-1)/create"
        [ "$status" -ne 0 ]
        [[ "$output" == *"Permission denied"* ]]
}

@test "writing a read-only attribute fails with EACCES" {
        sim_mount mtty
        [ "$(write_errno 3 "$(sim_type_dir mtty mtty-1)/available_instances")" = EACCES ]
}

# ---------------------------------------------------------------- capacity

@test "mtty: an mtty-2 takes 2 of the 24 shared ports" {
        sim_mount mtty
        sim_create mtty mtty-2 "$U1"
        [ "$(sim_available mtty mtty-1)" = 22 ]
        [ "$(sim_available mtty mtty-2)" = 11 ]
        sim_create mtty mtty-1 "$U2"
        [ "$(sim_available mtty mtty-1)" = 21 ]
        [ "$(sim_available mtty mtty-2)" = 10 ]
}

@test "mtty: a full pool answers ENOSPC and counts back up on remove" {
        sim_mount mtty
        for i in $(seq 1 12); do
                sim_create mtty mtty-2 "$(printf '11111111-2222-4333-8444-%012d' "$i")"
        done
        [ "$(sim_available mtty mtty-1)" = 0 ]
        [ "$(sim_available mtty mtty-2)" = 0 ]
        [ "$(write_errno "$U1" "$(sim_type_dir mtty mtty-2)/create")" = ENOSPC ]
        [ "$(write_errno "$U1" "$(sim_type_dir mtty mtty-1)/create")" = ENOSPC ]
        sim_remove "$(printf '11111111-2222-4333-8444-%012d' 5)"
        [ "$(sim_available mtty mtty-1)" = 2 ]
        [ "$(sim_available mtty mtty-2)" = 1 ]
}

@test "nvidia: available_instances counts down to 0, then create fails with the topology's errno" {
        sim_mount nvidia-timesliced
        [ "$(sim_available "$M60" nvidia-43)" = 2 ]
        sim_create "$M60" nvidia-43 "$U1"
        [ "$(sim_available "$M60" nvidia-43)" = 1 ]
        sim_create "$M60" nvidia-43 "$U2"
        [ "$(sim_available "$M60" nvidia-43)" = 0 ]
        [ "$(write_errno "$U3" "$(sim_type_dir "$M60" nvidia-43)/create")" = EINVAL ]
        sim_remove "$U1"
        [ "$(sim_available "$M60" nvidia-43)" = 1 ]
}

@test "nvidia: a GPU holding an mdev shows 0 for its other types and refuses them" {
        sim_mount nvidia-timesliced
        sim_create "$M60" nvidia-35 "$U1"
        [ "$(sim_available "$M60" nvidia-35)" = 15 ]
        for t in nvidia-36 nvidia-37 nvidia-40 nvidia-45; do
                [ "$(sim_available "$M60" "$t")" = 0 ]
        done
        [ "$(write_errno "$U2" "$(sim_type_dir "$M60" nvidia-36)/create")" = EINVAL ]
        # the other GPUs are not affected
        [ "$(sim_available "$M60B" nvidia-36)" = 16 ]
        sim_remove "$U1"
        [ "$(sim_available "$M60" nvidia-36)" = 16 ]
        [ "$(sim_available "$M60" nvidia-45)" = 1 ]
}

@test "sriov: each VF is a parent whose types offer 1 instance, 0 once it holds one" {
        sim_mount nvidia-sriov
        vf=0000:3b:00.4
        [ "$(readlink "$SIM_SYS/class/mdev_bus/$vf")" = "../../devices/pci0000:00/$vf" ]
        [ "$(sim_available "$vf" nvidia-471)" = 1 ]
        [ "$(sim_available "$vf" nvidia-476)" = 1 ]
        sim_create "$vf" nvidia-471 "$U1"
        [ "$(sim_available "$vf" nvidia-471)" = 0 ]
        [ "$(sim_available "$vf" nvidia-476)" = 0 ]
        [ "$(write_errno "$U2" "$(sim_type_dir "$vf" nvidia-471)/create")" = EINVAL ]
        [ "$(sim_available 0000:3b:00.5 nvidia-471)" = 1 ]
}

@test "sriov: the PF shows sriov_totalvfs, sriov_numvfs and virtfnN links; VFs link physfn" {
        sim_mount nvidia-sriov
        pf=$SIM_SYS/bus/pci/devices/0000:3b:00.0
        [ "$(cat "$pf/sriov_totalvfs")" = 16 ]
        [ "$(cat "$pf/sriov_numvfs")" = 16 ]
        [ "$(readlink "$pf/virtfn0")" = "../0000:3b:00.4" ]
        [ "$(readlink "$pf/virtfn15")" = "../0000:3b:02.3" ]
        [ "$(readlink "$SIM_SYS/bus/pci/devices/0000:3b:02.3/physfn")" = "../0000:3b:00.0" ]
        [ ! -e "$SIM_SYS/class/mdev_bus/0000:3b:00.0" ]
}

@test "sriov: writing sriov_numvfs enables VFs that register as parents; 0 removes them" {
        sim_mount nvidia-sriov-disabled
        pf=$SIM_SYS/bus/pci/devices/0000:3b:00.0
        [ ! -e "$pf/virtfn0" ]
        [ "$(write_errno 4 "$pf/sriov_numvfs")" = ok ]
        [ "$(cat "$pf/sriov_numvfs")" = 4 ]
        [ "$(ls "$SIM_SYS/class/mdev_bus" | tr '\n' ' ')" = "0000:3b:00.4 0000:3b:00.5 0000:3b:00.6 0000:3b:00.7 " ]
        [ -L "$pf/virtfn3" ]
        [ ! -e "$pf/virtfn4" ]
        [ -L "$SIM_SYS/bus/pci/devices/0000:3b:00.7" ]
        # the kernel: changing a non-zero count needs 0 first; too many is ERANGE
        [ "$(write_errno 8 "$pf/sriov_numvfs")" = EBUSY ]
        [ "$(write_errno 4 "$pf/sriov_numvfs")" = ok ]
        [ "$(write_errno 17 "$pf/sriov_numvfs")" = ERANGE ]
        sim_create 0000:3b:00.5 nvidia-473 "$U1"
        [ "$(write_errno 0 "$pf/sriov_numvfs")" = ok ]
        [ -z "$(ls "$SIM_SYS/class/mdev_bus")" ]
        [ -z "$(sim_mdevs)" ]
        [ ! -e "$pf/virtfn0" ]
        [ ! -e "$SIM_SYS/bus/pci/devices/0000:3b:00.7" ]
        [ "$(write_errno 16 "$pf/sriov_numvfs")" = ok ]
        [ "$(ls "$SIM_SYS/class/mdev_bus" | wc -l)" -eq 16 ]
}

# -------------------------------------------------------------------- remove

@test "remove: writing 1 removes the mdev and its links; available counts back up" {
        sim_mount nvidia-timesliced
        sim_create "$M60" nvidia-35 "$U1"
        [ "$(write_errno 1 "$SIM_SYS/bus/mdev/devices/$U1/remove")" = ok ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        [ ! -L "$SIM_SYS/bus/mdev/devices/$U1" ]
        [ ! -e "$SIM_SYS/devices/pci0000:00/$M60/$U1" ]
        [ ! -L "$(sim_type_dir "$M60" nvidia-35)/devices/$U1" ]
        [ "$(sim_available "$M60" nvidia-35)" = 16 ]
}

@test "remove: writing 0 does nothing" {
        sim_mount mtty
        sim_create mtty mtty-1 "$U1"
        [ "$(write_errno 0 "$SIM_SYS/bus/mdev/devices/$U1/remove")" = ok ]
        [ -e "$SIM_SYS/bus/mdev/devices/$U1/remove" ]
        [ "$(sim_available mtty mtty-1)" = 23 ]
        [ "$(write_errno x "$SIM_SYS/bus/mdev/devices/$U1/remove")" = EINVAL ]
        [ -e "$SIM_SYS/bus/mdev/devices/$U1" ]
}

@test "remove: a second remove finds the path gone (ENOENT)" {
        sim_mount mtty
        sim_create mtty mtty-1 "$U1"
        sim_remove "$U1"
        [ "$(write_errno 1 "$SIM_SYS/bus/mdev/devices/$U1/remove")" = ENOENT ]
}

# -------------------------------------------------------------------- faults

@test "fault: the next create fails with the given errno, once" {
        sim_mount mtty
        sim_create_fail EIO
        [ "$(write_errno "$U1" "$(sim_type_dir mtty mtty-1)/create")" = EIO ]
        [ -z "$(sim_mdevs)" ]
        [ "$(write_errno "$U1" "$(sim_type_dir mtty mtty-1)/create")" = ok ]
}

@test "fault: create-fail on one parent leaves the others alone, COUNT times" {
        sim_mount nvidia-timesliced
        sim_create_fail EUSERS "$M60B" 2
        [ "$(write_errno "$U1" "$(sim_type_dir "$M60" nvidia-35)/create")" = ok ]
        [ "$(write_errno "$U2" "$(sim_type_dir "$M60B" nvidia-35)/create")" = EUSERS ]
        [ "$(write_errno "$U2" "$(sim_type_dir "$M60B" nvidia-35)/create")" = EUSERS ]
        [ "$(write_errno "$U2" "$(sim_type_dir "$M60B" nvidia-35)/create")" = ok ]
}

@test "fault: create-fail comes after the UUID checks (EINVAL and EEXIST win)" {
        sim_mount mtty
        sim_create mtty mtty-1 "$U1"
        sim_create_fail EIO
        [ "$(write_errno "$U1" "$(sim_type_dir mtty mtty-1)/create")" = EEXIST ]
        [ "$(write_errno bad "$(sim_type_dir mtty mtty-1)/create")" = EINVAL ]
        [ "$(write_errno "$U2" "$(sim_type_dir mtty mtty-1)/create")" = EIO ]
}

@test "fault: a blocked remove keeps the mdev until it finishes, then succeeds" {
        sim_mount mtty
        sim_create mtty mtty-1 "$U1"
        # long enough that the checks below run inside it on a stalled machine
        sim_remove_block 5000
        write_errno 1 "$SIM_SYS/bus/mdev/devices/$U1/remove" > "$BATS_TEST_TMPDIR/result" &
        pid=$!
        # the remove has started once its "remove" file is gone
        for i in $(seq 100); do
                [ -e "$SIM_SYS/bus/mdev/devices/$U1/remove" ] || break
                sleep 0.05
        done
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1/remove" ]
        [ -d "$SIM_SYS/bus/mdev/devices/$U1" ]
        [ "$(sim_available mtty mtty-1)" = 23 ]
        wait "$pid"
        [ "$(cat "$BATS_TEST_TMPDIR/result")" = ok ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        [ "$(sim_available mtty mtty-1)" = 24 ]
}

@test "fault: remove-block for one UUID does not block the others" {
        sim_mount mtty
        sim_create mtty mtty-1 "$U1"
        sim_create mtty mtty-1 "$U2"
        sim_remove_block 600000 "$U1"
        sim_remove "$U2"
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U2" ]
        grep -q "remove-block ms=600000 uuid=$U1" <(sim_state)
        sim_remove_block 0
}

@test "fault: remove-busy fails N removes with EBUSY, then remove works" {
        sim_mount mtty
        sim_create mtty mtty-1 "$U1"
        sim_remove_busy 2
        [ "$(write_errno 1 "$SIM_SYS/bus/mdev/devices/$U1/remove")" = EBUSY ]
        [ "$(write_errno 1 "$SIM_SYS/bus/mdev/devices/$U1/remove")" = EBUSY ]
        [ -e "$SIM_SYS/bus/mdev/devices/$U1/remove" ]
        [ "$(write_errno 1 "$SIM_SYS/bus/mdev/devices/$U1/remove")" = ok ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
}

@test "fault: an unregistered parent loses its mdevs and class link, its PCI device stays" {
        sim_mount nvidia-timesliced
        sim_create "$M60" nvidia-35 "$U1"
        sim_create "$M60B" nvidia-35 "$U2"
        sim_unregister "$M60"
        [ ! -e "$SIM_SYS/class/mdev_bus/$M60" ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        [ ! -e "$SIM_SYS/devices/pci0000:00/$M60/mdev_supported_types" ]
        [ -d "$SIM_SYS/bus/pci/devices/$M60" ]
        [ -e "$SIM_SYS/bus/mdev/devices/$U2" ]
        [ "$(sim_mdevs)" = "$U2" ]
}

@test "fault: mtty unregisters with its virtual device, as when its module unloads" {
        sim_mount mtty
        sim_create mtty mtty-2 "$U1"
        sim_unregister mtty
        [ ! -e "$SIM_SYS/class/mdev_bus/mtty" ]
        [ ! -e "$SIM_SYS/devices/virtual/mtty/mtty" ]
        [ -z "$(sim_mdevs)" ]
        sim_register mtty
        [ -d "$SIM_SYS/devices/virtual/mtty/mtty/mdev_supported_types/mtty-2" ]
        [ "$(sim_available mtty mtty-1)" = 24 ]
}

@test "fault: a parent registers again with no mdevs and full capacity" {
        sim_mount nvidia-timesliced
        sim_create "$M60" nvidia-36 "$U1"
        sim_unregister "$M60"
        sim_register "$M60"
        [ "$(readlink "$SIM_SYS/class/mdev_bus/$M60")" = "../../devices/pci0000:00/$M60" ]
        [ -z "$(sim_mdevs)" ]
        [ "$(sim_available "$M60" nvidia-35)" = 16 ]
        sim_create "$M60" nvidia-35 "$U1"
}

@test "fault: a path read before an unregister is gone at once after it, and back after register" {
        sim_mount nvidia-timesliced
        a=$SIM_SYS/class/mdev_bus/$M60/mdev_supported_types/nvidia-35/available_instances
        [ "$(cat "$a")" = 16 ]
        [ "$(cat "$a")" = 16 ]
        sim_unregister "$M60"
        [ ! -e "$a" ]
        [ ! -e "$SIM_SYS/devices/pci0000:00/$M60/mdev_supported_types/nvidia-35/available_instances" ]
        sim_register "$M60"
        [ "$(cat "$a")" = 16 ]
}

@test "fault: reading an attribute opened before its parent unregistered fails" {
        sim_mount nvidia-timesliced
        a=$(sim_type_dir "$M60" nvidia-35)/available_instances
        exec {fd}< "$a"
        sim_unregister "$M60"
        run cat <&"$fd"
        exec {fd}<&-
        [ "$status" -ne 0 ]
        [[ "$output" == *"No such device"* ]]
}

@test "fault: a parent can register after a delay" {
        sim_mount nvidia-timesliced
        sim_unregister "$M60"
        sim_register "$M60" 3000
        # returns at once: not registered yet, the PCI device is there (the
        # delay is long so that a stalled machine cannot outrun this check)
        [ ! -e "$SIM_SYS/class/mdev_bus/$M60" ]
        [ -d "$SIM_SYS/bus/pci/devices/$M60" ]
        for i in $(seq 200); do
                [ -e "$SIM_SYS/class/mdev_bus/$M60" ] && break
                sleep 0.05
        done
        [ -e "$SIM_SYS/class/mdev_bus/$M60/mdev_supported_types/nvidia-35/create" ]
}

@test "fault: a topology parent can start unregistered" {
        printf '%s\n' 'types t' 'type nvidia-35 instances=2' 'end' \
                'parent 0000:84:00.0 types=t registered=0' > "$BATS_TEST_TMPDIR/late.conf"
        sim_mount "$BATS_TEST_TMPDIR/late.conf"
        [ -d "$SIM_SYS/bus/pci/devices/0000:84:00.0" ]
        [ ! -e "$SIM_SYS/class/mdev_bus/0000:84:00.0" ]
        sim_register 0000:84:00.0
        [ "$(sim_available 0000:84:00.0 nvidia-35)" = 2 ]
}

@test "control: an unknown command or parent is refused" {
        sim_mount mtty
        ! sim_ctl frobnicate 2>/dev/null || false
        ! sim_ctl unregister nosuchparent 2>/dev/null || false
        ! sim_ctl create-fail ENOTANERRNO 2>/dev/null || false
        run "$MH_SIM" --ctl "$SIM_SYS" remove-busy x
        [ "$status" -ne 0 ]
        run "$MH_SIM" --ctl "$SIM_SYS" remove-busy 1
        [ "$status" -eq 0 ]
        grep -q "remove-busy count=1" <(sim_state)
        sim_faults_reset
        grep -q "remove-busy count=0" <(sim_state)
}

# ------------------------------------------------------------------ counters

@test "counters: opens, reads and writes are counted per path and reset" {
        [[ " ${SIM_FLAGS:-} " != *" -c "* ]] || skip "the counters do not see what the kernel serves from its cache (-c)"
        sim_mount nvidia-timesliced
        sim_counters_reset
        [ "$(sim_counter_total opens)" = 0 ]
        cat "$(sim_type_dir "$M60" nvidia-35)/available_instances" > /dev/null
        cat "$(sim_type_dir "$M60" nvidia-35)/available_instances" > /dev/null
        sim_create "$M60" nvidia-35 "$U1"
        p=/devices/pci0000:00/$M60/mdev_supported_types/nvidia-35
        line=$(sim_counters | awk -v p="$p/available_instances" '$7 == p')
        [ "$(echo "$line" | awk '{ print $1 }')" = 2 ]
        [ "$(echo "$line" | awk '{ print $2 }')" -ge 2 ]
        line=$(sim_counters | awk -v p="$p/create" '$7 == p')
        [ "$(echo "$line" | awk '{ print $1, $3 }')" = "1 1" ]
        [ "$(sim_files_opened)" = 2 ]
        [ "$(sim_counter_total writes)" = 1 ]
        ls "$SIM_SYS/class/mdev_bus" > /dev/null
        [ "$(sim_counter_total readdirs)" -ge 1 ]
        "$MH_SIM" --counters "$SIM_SYS" | grep -q "$p/create"
        sim_counters_reset
        [ "$(sim_counter_total opens)" = 0 ]
        [ "$(sim_files_opened)" = 0 ]
}

# --------------------------------------------------------------- concurrency

# ------------------------------------------------- -c: the kernel's page cache
# With -c the kernel keeps attribute text and sends no open (bench/run mounts
# it so); whatever it keeps must never be older than the last completed write.

@test "-c: available_instances follows every create and remove at once, its own parent's only" {
        SIM_FLAGS=-c sim_mount nvidia-timesliced
        local i u
        [ "$(sim_available "$M60" nvidia-43)" = 2 ]
        [ "$(sim_available "$M60" nvidia-35)" = 16 ]
        [ "$(sim_available "$M60B" nvidia-35)" = 16 ]
        for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
                u=$(printf '11111111-2222-4333-8444-%012d' "$i")
                sim_create "$M60" nvidia-35 "$u"
                [ "$(sim_available "$M60" nvidia-35)" = $((16 - i)) ]
                [ "$(sim_available "$M60" nvidia-43)" = 0 ]
                [ "$(sim_available "$M60B" nvidia-35)" = 16 ]
        done
        [ "$(write_errno "$U1" "$(sim_type_dir "$M60" nvidia-35)/create")" = EINVAL ]
        sim_create "$M60B" nvidia-36 "$U1"
        [ "$(sim_available "$M60B" nvidia-35)" = 0 ]
        [ "$(sim_available "$M60" nvidia-35)" = 0 ]
        sim_remove 11111111-2222-4333-8444-000000000016
        [ "$(sim_available "$M60" nvidia-35)" = 1 ]
        [ "$(sim_available "$M60B" nvidia-36)" = 15 ]
        # the cache is in use: three reads, no open, one read reaches it
        sim_counters_reset
        for i in 1 2 3; do [ "$(sim_available "$M60B" nvidia-36)" = 15 ]; done
        local line
        line=$(sim_counters | awk -v p="/devices/pci0000:00/$M60B/mdev_supported_types/nvidia-36/available_instances" '$7 == p')
        echo "$line"
        [ "$(echo "$line" | awk '{ print $1, $2 }')" = "0 1" ]
}

@test "-c: mtty's shared pool shows in every type of the parent" {
        SIM_FLAGS=-c sim_mount mtty
        [ "$(sim_available mtty mtty-1)" = 24 ]
        [ "$(sim_available mtty mtty-2)" = 12 ]
        sim_create mtty mtty-2 "$U1"
        [ "$(sim_available mtty mtty-1)" = 22 ]
        [ "$(sim_available mtty mtty-2)" = 11 ]
        sim_remove "$U1"
        [ "$(sim_available mtty mtty-1)" = 24 ]
}

@test "-c: an unregister and a register through .sim/ctl show at once" {
        SIM_FLAGS=-c sim_mount nvidia-timesliced
        sim_create "$M60" nvidia-35 "$U1"
        [ "$(sim_available "$M60" nvidia-35)" = 15 ]
        sim_unregister "$M60"
        [ ! -e "$(sim_type_dir "$M60" nvidia-35)/available_instances" ]
        sim_register "$M60"
        [ "$(sim_available "$M60" nvidia-35)" = 16 ]
}

@test "-c: an mdev's entries go at once with it, and a UUID made again elsewhere shows its new place" {
        SIM_FLAGS=-c sim_mount nvidia-timesliced
        sim_create "$M60" nvidia-35 "$U1"
        [ "$(basename "$(readlink "$SIM_SYS/bus/mdev/devices/$U1")")" = "$U1" ]
        [[ "$(readlink "$SIM_SYS/bus/mdev/devices/$U1")" == *"/$M60/$U1" ]]
        [ "$(readlink "$SIM_SYS/bus/mdev/devices/$U1/mdev_type")" = ../mdev_supported_types/nvidia-35 ]
        [ -e "$(sim_type_dir "$M60" nvidia-35)/devices/$U1" ]
        sim_remove "$U1"
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        [ ! -e "$(sim_type_dir "$M60" nvidia-35)/devices/$U1" ]
        sim_create "$M60B" nvidia-36 "$U1"
        [[ "$(readlink "$SIM_SYS/bus/mdev/devices/$U1")" == *"/$M60B/$U1" ]]
        [ "$(readlink "$SIM_SYS/bus/mdev/devices/$U1/mdev_type")" = ../mdev_supported_types/nvidia-36 ]
        [ ! -e "$(sim_type_dir "$M60" nvidia-35)/devices/$U1" ]
        sim_unregister "$M60B"
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
}

@test "-c: the counters are read whole when they are longer than a page" {
        SIM_FLAGS=-c sim_mount nvidia-timesliced
        sim_counters_reset
        local n
        # -ls: a stat (a lookup, counted) of every path
        n=$(find "$SIM_SYS/devices" -ls | wc -l)
        [ "$(sim_counters | wc -c)" -gt 16384 ]
        [ "$(sim_counters | grep -c ' /devices')" -eq "$n" ]
}

@test "-c: sriov_numvfs, an mdev's files and the counters are never served stale" {
        SIM_FLAGS=-c sim_mount nvidia-sriov-disabled
        local pf=$SIM_SYS/bus/pci/devices/0000:3b:00.0 before
        [ "$(cat "$pf/sriov_numvfs")" = 0 ]
        [ "$(write_errno 4 "$pf/sriov_numvfs")" = ok ]
        [ "$(cat "$pf/sriov_numvfs")" = 4 ]
        [ "$(write_errno 0 "$pf/sriov_numvfs")" = ok ]
        [ "$(cat "$pf/sriov_numvfs")" = 0 ]
        before=$(sim_counters)
        [ "$(write_errno 2 "$pf/sriov_numvfs")" = ok ]
        [ "$(sim_counters)" != "$before" ]
        sim_create 0000:3b:00.4 nvidia-471 "$U1"
        [ "$(readlink "$SIM_SYS/bus/mdev/devices/$U1/mdev_type")" = ../mdev_supported_types/nvidia-471 ]
        [ "$(sim_available 0000:3b:00.4 nvidia-471)" = 0 ]
        [ "$(sim_available 0000:3b:00.5 nvidia-471)" = 1 ]
}

@test "parallel creates on mtty: exactly the pool's 24 succeed" {
        sim_mount mtty
        c=$(sim_type_dir mtty mtty-1)/create
        for i in $(seq 1 32); do
                write_errno "$(printf '11111111-2222-4333-8444-%012d' "$i")" "$c" > "$BATS_TEST_TMPDIR/r$i" &
        done
        wait
        [ "$(cat "$BATS_TEST_TMPDIR"/r* | grep -c '^ok$')" = 24 ]
        [ "$(cat "$BATS_TEST_TMPDIR"/r* | grep -c '^ENOSPC$')" = 8 ]
        [ "$(sim_mdevs | wc -l)" = 24 ]
        [ "$(sim_available mtty mtty-1)" = 0 ]
}

@test "parallel creates and removes on large.conf leave a consistent tree" {
        sim_mount large
        for i in $(seq 0 31); do
                (
                        p=$(printf '0000:%02x:00.0' $((i + 1)))
                        u=$(printf '11111111-2222-4333-8444-%012d' "$i")
                        for n in $(seq 10); do
                                sim_create "$p" nvidia-100 "$u" && sim_remove "$u" || exit 1
                        done
                        sim_create "$p" nvidia-100 "$u"
                ) &
        done
        wait
        [ "$(sim_mdevs | wc -l)" = 32 ]
        grep -q '^mdevs 32$' <(sim_state)
        [ "$(sim_available 0000:01:00.0 nvidia-100)" = 15 ]
        [ "$(sim_available 0000:01:00.0 nvidia-101)" = 0 ]
}

@test "1000 create/remove cycles leave nothing behind" {
        sim_mount mtty
        c=$(sim_type_dir mtty mtty-2)/create
        for i in $(seq 1000); do
                printf '%s\n' "$U1" > "$c"
                printf '1\n' > "$SIM_SYS/bus/mdev/devices/$U1/remove"
        done
        grep -q '^mdevs 0$' <(sim_state)
        [ "$(sim_available mtty mtty-1)" = 24 ]
}

@test "sim_umount leaves no mount behind while a remove is blocked" {
        sim_mount mtty
        sim_create mtty mtty-1 "$U1"
        sim_remove_block 1000
        sim_remove "$U1" &
        # The remove is under way (and blocked) once its file is gone.
        for i in $(seq 200); do
                [ -e "$SIM_SYS/bus/mdev/devices/$U1/remove" ] || break
                sleep 0.05
        done
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1/remove" ]
        [ -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        sim_umount
        wait || true
        no_mount_left
}

# ---------------------------------------------------------------- transcript

@test "the mtty transcript matches the one expected of a real kernel" {
        sim_mount mtty
        out=$(sh "$MH_SOURCE_DIR/tests/sim/mtty-transcript.sh" "$SIM_SYS")
        diff -u "$MH_SOURCE_DIR/tests/sim/mtty-transcript.expected" <(printf '%s\n' "$out")
}
