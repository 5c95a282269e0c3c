#!/usr/bin/env bats
# A third kind of device, behind the backend interface (lib/backend.h): the
# test build's fake backend (lib/backend-fake.c) and its model in the
# simulator (tests/sim/sim-fake.c), on one host with an mdev GPU and an
# NVIDIA VFIO GPU beside it (tests/sim/topologies/fake-vf.conf). The hook,
# migrate, the udev helper, list and the inventory know nothing of it: it
# is found through the table.

load hook-helpers

FPF=0000:a1:00.0
FVF1=0000:a1:00.4
FVF2=0000:a1:00.5
NPF=0000:41:00.0
NVF1=0000:41:00.4
FAKE4=fake-7 # 4 GiB: 4 on the fake GPU's 16
FAKE8=fake-8 # 8 GiB

# The fake backend is built with the crash points (the test build's only).
setup() {
        needs_crashpoints
}

fake_type() {
        cat "$SIM_SYS/bus/pci/devices/$1/fakegpu/current_type"
}

all_conf() {
        config_types nvidia-35 "$P84" nvidia-1150 "$NPF" "$FAKE4" "$FPF"
}

@test "sim fake: a PF whose VFs carry fakegpu/current_type and creatable_types, nothing of NVIDIA's" {
        sim_mount fake-vf
        vf=$SIM_SYS/bus/pci/devices/$FVF1
        [ "$(basename "$(readlink "$vf/physfn")")" = "$FPF" ]
        [ "$(basename "$(readlink -f "$vf/driver")")" = fakegpu ]
        [ "$(fake_type "$FVF1")" = 0 ]
        grep -q '^7 *: Fake 4G$' "$vf/fakegpu/creatable_types"
        [ ! -e "$vf/nvidia" ]
}

@test "prepare programs a fake VF, an NVIDIA VF and an mdev of one guest, each by its backend" {
        sim_mount fake-vf
        all_conf
        run vprepare g1 "pci=$FVF1,type=$FAKE4" "pci=$NVF1,type=nvidia-1150" "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        [ "$(fake_type "$FVF1")" = 7 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$NVF1/nvidia/current_vgpu_type")" = 1150 ]
        mdev_exists "$U1"
        [ "$(record_get "$FVF1" parent)" = "$FPF" ]
        [ "$(record_get "$FVF1" type)" = "$FAKE4" ]
        [ "$(record_get "$FVF1" state)" = assigned ]
        [ "$(record_get "$FVF1" origin)" = created ]
        [ "$(record_get "$NVF1" type)" = nvidia-1150 ]
}

@test "a failed fake VF undoes the guest's other backends' devices too (all or nothing)" {
        sim_mount fake-vf
        all_conf
        sim_create_fail EIO "$FVF1"
        run vprepare g1 "$U1,type=nvidia-35" "pci=$NVF1,type=nvidia-1150" "pci=$FVF1,type=$FAKE4"
        [ "$status" -eq 1 ]
        [[ "$output" == *"$FVF1"* ]]
        mdev_absent "$U1"
        [ "$(cat "$SIM_SYS/bus/pci/devices/$NVF1/nvidia/current_vgpu_type")" = 0 ]
        [ "$(fake_type "$FVF1")" = 0 ]
        [ -z "$(records)" ]
}

@test "another guest's fake VF is refused, and release clears only the guest's own" {
        sim_mount fake-vf
        all_conf
        run -0 vprepare g1 "pci=$FVF1,type=$FAKE4"
        run vprepare g2 "pci=$FVF1,type=$FAKE4"
        [ "$status" -eq 1 ]
        [[ "$output" == *"held by guest 'g1'"* ]]
        run -0 vprepare g2 "pci=$FVF2,type=$FAKE4"
        run -0 release g1
        [ "$(fake_type "$FVF1")" = 0 ]
        [ "$(fake_type "$FVF2")" = 7 ]
        record_absent "$FVF1"
        [ "$(record_get "$FVF2" guest)" = g2 ]
}

@test "list, types and inventory show the fake backend's devices and GPU beside the others" {
        sim_mount fake-vf
        all_conf
        run -0 vprepare g1 "pci=$FVF1,type=$FAKE4" "$U1,type=nvidia-35"
        run -0 "$MH_CLI" list
        [ "$(printf '%s\n' "$output" | grep -c "$FVF1.*$FAKE4.*g1")" = 1 ]
        [ "$(printf '%s\n' "$output" | grep -c "$U1.*nvidia-35.*g1")" = 1 ]
        run -0 "$MH_CLI" types --parent "$FPF"
        [[ "$output" == *"$FAKE4"*"Fake 4G"* ]]
        run -0 "$MH_CLI" inventory --json
        [[ "$output" == *"$FPF"* ]]
}

@test "migrate places a fake vGPU on a free fake VF of the destination and rewrites its address" {
        A="$BATS_TEST_TMPDIR/a" B="$BATS_TEST_TMPDIR/b" T="$BATS_TEST_TMPDIR"
        sim_mount fake-vf "$A"
        sim_mount fake-vf "$B"
        all_conf
        sim_use "$A"
        all_conf
        vxml web1 "pci=$FVF2,type=$FAKE4" > "$T/web1.xml"
        # FVF2 is another guest's on B: web1 gets another fake VF there
        sim_use "$B"
        run -0 vprepare other "pci=$FVF2,type=$FAKE4"
        run --separate-stderr hook web1 migrate begin - < "$T/web1.xml"
        [ "$status" -eq 0 ]
        [[ "$output" == *'function="0x4"'* ]]
        [[ "$output" == *'pci="'"$FVF1"'"'* ]]
        [ "$(fake_type "$FVF1")" = 7 ]
        [ "$(record_get "$FVF1" guest)" = web1 ]
        [ "$(record_get "$FVF1" state)" = incoming ]
        [ "$(record_get "$FVF2" guest)" = other ]
}

@test "udev: a fake VF that comes back without its vGPU marks its guest's record lost" {
        sim_mount fake-vf
        all_conf
        run -0 vprepare g1 "pci=$FVF1,type=$FAKE4"
        printf '0\n' > "$SIM_SYS/bus/pci/devices/$FVF1/fakegpu/current_type"
        run env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION=bind SUBSYSTEM=pci \
                DEVPATH="/devices/pci0000:00/$FVF1" SEQNUM=1 "$MH_UDEV" "$FVF1"
        [ "$status" -eq 0 ]
        [ "$(record_get "$FVF1" state)" = lost ]
}
