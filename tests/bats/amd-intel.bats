#!/usr/bin/env bats
# One host with an AMD GPU on GIM and an Intel GPU on xe beside an mdev GPU
# (tests/sim/topologies/amd-intel.conf): a guest holding a VF of each and an
# mdev goes through the backend table as one transaction, and two guests
# never get one VF. Tested against the simulator's models only.

load hook-helpers
load whole-helpers

AVF1=0000:c2:00.4
AVF2=0000:c2:00.5
XVF1=0000:03:00.4
XVF2=0000:03:00.5
AMD=amd-mxgpu-2
XE=intel-xe-8192

setup() {
        sim_mount amd-intel
        config_types nvidia-35 "$P84" "$AMD" 0000:c2:00.0 "$XE" 0000:03:00.0
}

@test "a guest with an AMD VF, an Intel VF and an mdev gets all three, and gives all three back" {
        run -0 aprepare g1 "pci=$AVF1,type=$AMD" "pci=$XVF1,type=$XE" "$U1,type=nvidia-35"
        mdev_exists "$U1"
        [ "$(record_get "$AVF1" guest)" = g1 ]
        [ "$(record_get "$AVF1" type)" = "$AMD" ]
        [ "$(record_get "$XVF1" guest)" = g1 ]
        [ "$(record_get "$XVF1" type)" = "$XE" ]
        run -0 release g1
        mdev_absent "$U1"
        record_absent "$AVF1"
        record_absent "$XVF1"
}

@test "a guest refused one VF gets none: the AMD VF and the mdev are not taken either" {
        run -0 aprepare g1 "pci=$XVF1,type=$XE"
        arefused g2 "$U1,type=nvidia-35" "pci=$AVF1,type=$AMD" "pci=$XVF1,type=$XE"
        [[ "$output" == *"held by guest 'g1'"* ]]
        mdev_absent "$U1"
        record_absent "$AVF1"
        [ "$(record_get "$XVF1" guest)" = g1 ]
}

@test "two guests never get one VF: pick gives each guest another, of each vendor" {
        for g in g1 g2; do
                a=$("$MH_CLI" pick "$AMD")
                x=$("$MH_CLI" pick "$XE")
                run -0 aprepare "$g" "pci=$a,type=$AMD" "pci=$x,type=$XE"
        done
        [ "$(record_get "$AVF1" guest)" = g1 ]
        [ "$(record_get "$AVF2" guest)" = g2 ]
        [ "$(record_get "$XVF1" guest)" = g1 ]
        [ "$(record_get "$XVF2" guest)" = g2 ]
        run "$MH_CLI" pick "$AMD"
        [ "$status" -ne 0 ]
        run "$MH_CLI" pick "$XE"
        [ "$status" -ne 0 ]
}

@test "list shows both vendors' VFs, each of its own type, beside the mdevs" {
        run -0 aprepare g1 "pci=$AVF1,type=$AMD" "pci=$XVF2,type=$XE" "$U1,type=nvidia-35"
        run -0 "$MH_CLI" list
        [ "$(printf '%s\n' "$output" | grep -c "^$AVF1 .*$AMD .*g1")" = 1 ]
        [ "$(printf '%s\n' "$output" | grep -c "^$XVF2 .*$XE .*g1")" = 1 ]
        [ "$(printf '%s\n' "$output" | grep -c "^$U1 .*nvidia-35 .*g1")" = 1 ]
        [ "$(printf '%s\n' "$output" | grep -c "^$AVF2 .*$AMD .*foreign")" = 1 ]
}

@test "migrate of a guest with an AMD VF and an Intel VF is refused in one line for the AMD one, and neither is claimed" {
        xe_vfio_pci_installed # the Intel VF alone could migrate here
        axml web1 "pci=$AVF1,type=$AMD" "pci=$XVF1,type=$XE" > "$BATS_TEST_TMPDIR/web1.xml"
        sim_counters_reset
        run hook web1 migrate begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"AMD MxGPU VF $AVF1, which cannot migrate"* ]]
        [ "$(sim_counter_total writes)" -eq 0 ]
        record_absent "$AVF1"
        record_absent "$XVF1"
}

@test "a guest with an Intel VF and an mdev migrates in: both claimed as incoming, in one transaction" {
        xe_vfio_pci_installed
        vxml web1 "$U1,type=nvidia-35" "pci=$XVF2,type=$XE,managed" > "$BATS_TEST_TMPDIR/web1.xml"
        run -0 hook web1 migrate begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$(record_get "$U1" state)" = incoming ]
        [ "$(record_get "$XVF2" state)" = incoming ]
        mdev_exists "$U1"
        run -0 hook web1 release end failed < "$BATS_TEST_TMPDIR/web1.xml"
        mdev_absent "$U1"
        record_absent "$XVF2"
}

@test "an AMD VF asked for a scheduling profile is refused in one line, and the Intel VF is not claimed either" {
        arefused g1 "pci=$XVF1,type=$XE,exec_quantum_ms=20" "pci=$AVF1,type=$AMD,exec_quantum_ms=20"
        [[ "$output" == *"VF $AVF1 is an AMD MxGPU VF, which has no scheduling profile"* ]]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:03:00.0/sriov_admin/vf1/profile/exec_quantum_ms")" = 0 ]
}

@test "after a reboot the plan gives the Intel GPU its VFs back with their quotas, checks the AMD GPU, and the guests start again" {
        config_types nvidia-35 "$P84" "$AMD" 0000:c2:00.0 "$XE" 0000:03:00.0 -- \
                "[gpu_0000:c2:00.0]" "spatial_partition = DPX" \
                "[gpu_0000:03:00.0]" "vfs = 2" "vram_quota = 8G"
        run -0 "$MH_CLI" gpu plan
        run -0 aprepare g1 "pci=$AVF1,type=$AMD" "pci=$XVF1,type=$XE"
        # a reboot: xe loses its VFs and their provisioning (all of it is
        # lost, sysfs-driver-intel-xe-sriov); GIM keeps its partition
        sim_new_boot
        printf '0\n' > "$SIM_SYS/bus/pci/devices/0000:03:00.0/sriov_numvfs"
        [ ! -e "$SIM_SYS/bus/pci/devices/$XVF1" ]
        run -0 "$MH_CLI" gpu plan
        echo "$output"
        [[ "$output" == *"0000:03:00.0: 2 VFs, 8G of VRAM each: brought to its declared state (3 writes)"* ]]
        [[ "$output" == *"0000:c2:00.0: DPX, 2 VFs: as declared (checked, never changed)"* ]]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:03:00.0/sriov_admin/vf1/profile/vram_quota")" = 8589934592 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:03:00.0/sriov_admin/vf2/profile/vram_quota")" = 8589934592 ]
        # the guest starts again on the same VFs, recorded in this boot
        run -0 hook g1 prepare begin - < "$BATS_TEST_TMPDIR/g1.xml"
        [ "$(record_get "$AVF1" boot_id)" = "$(boot_id)" ]
        [ "$(record_get "$XVF1" boot_id)" = "$(boot_id)" ]
        [ "$(record_get "$XVF1" state)" = assigned ]
        # and another guest cannot take them
        arefused g2 "pci=$XVF1,type=$XE"
        [[ "$output" == *"held by guest 'g1'"* ]]
}
