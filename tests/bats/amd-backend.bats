#!/usr/bin/env bats
# AMD MxGPU on the open-source GIM driver as a backend (lib/backend-amd.c,
# lib/amdgim.c) and its model in the simulator (tests/sim/sim-amd.c), on
# one host with an mdev GPU, two MI300X partitioned CPX (8 VFs each) and
# one partitioned DPX (2 VFs): tests/sim/topologies/amd-gim.conf. A guest gets
# a whole VF as a <hostdev type='pci' managed='yes'> with an <mh:vgpu>
# entry; its type is its GPU's partition (amd-mxgpu-<VFs>), never changed
# by mdev-hooks. Tested against the model only.

load hook-helpers
load whole-helpers

CPF=0000:c1:00.0 # CPX: 8 VFs
CVF1=0000:c1:00.4
CVF2=0000:c1:00.5
CVF8=0000:c1:01.3
CPF3=0000:c3:00.0 # CPX: 8 VFs
CVF31=0000:c3:00.4
DPF=0000:c2:00.0 # DPX: 2 VFs
DVF1=0000:c2:00.4
DVF2=0000:c2:00.5
CPX=amd-mxgpu-8
DPX=amd-mxgpu-2

setup() {
        sim_mount amd-gim
        all_conf
}

all_conf() {
        config_types nvidia-35 "$P84" "$CPX" "$CPF, $CPF3" "$DPX" "$DPF" -- "$@"
}

@test "sim amd: a PF bound to gim whose VFs follow its partition, with no attribute of their own" {
        pf=$SIM_SYS/bus/pci/devices/$CPF
        [ "$(basename "$(readlink "$pf/driver")")" = gim ]
        [ "$(cat "$pf/spatial_partition_mode")" = CPX ]
        [ "$(cat "$pf/sriov_numvfs")" = 8 ]
        [ "$(ls -d "$pf"/virtfn* | wc -l)" = 8 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$DPF/sriov_numvfs")" = 2 ]
        [ "$(basename "$(readlink "$SIM_SYS/bus/pci/devices/$CVF8/physfn")")" = "$CPF" ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$CVF1/device")" = 0x74b5 ]
        [ ! -e "$SIM_SYS/bus/pci/devices/$CVF1/driver" ]
        [ ! -e "$SIM_SYS/bus/pci/devices/$CVF1/nvidia" ]
}

@test "sim amd: sriov_numvfs refuses a write with ENOENT, as GIM has no sriov_configure" {
        run bash -c "printf '4\\n' > '$SIM_SYS/bus/pci/devices/$CPF/sriov_numvfs'"
        [ "$status" -ne 0 ]
        [[ "$output" == *"No such file or directory"* ]]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$CPF/sriov_numvfs")" = 8 ]
}

@test "sim amd: a partition write reports success and changes nothing" {
        f=$SIM_SYS/bus/pci/devices/$CPF/accelerator_partition_profile
        printf 'QPX\n' > "$f"
        [ "$(cat "$f")" = CPX ]
        printf 'NPS4\n' > "$SIM_SYS/bus/pci/devices/$CPF/memory_partition_mode"
        [ "$(cat "$SIM_SYS/bus/pci/devices/$CPF/memory_partition_mode")" = NPS1 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$CPF/sriov_numvfs")" = 8 ]
}

@test "prepare records an AMD VF for the guest, of its partition's type, and writes nothing to sysfs" {
        sim_counters_reset
        run aprepare g1 "pci=$CVF1,type=$CPX"
        [ "$status" -eq 0 ]
        [ "$(sim_counter_total writes)" -eq 0 ]
        [ "$(record_get "$CVF1" parent)" = "$CPF" ]
        [ "$(record_get "$CVF1" type)" = "$CPX" ]
        [ "$(record_get "$CVF1" state)" = assigned ]
        [ "$(record_get "$CVF1" origin)" = borrowed ]
        [ "$(record_get "$CVF1" guest)" = g1 ]
}

@test "prepare takes an AMD VF's type from its partition when the entry names none" {
        run aprepare g1 "pci=$DVF1"
        [ "$status" -eq 0 ]
        [ "$(record_get "$DVF1" type)" = "$DPX" ]
}

@test "two guests never get one AMD VF: the second is refused in one line naming the holder" {
        run -0 aprepare g1 "pci=$CVF1,type=$CPX"
        arefused g2 "pci=$CVF1,type=$CPX"
        [[ "$output" == *"held by guest 'g1'"* ]]
        [ "$(record_get "$CVF1" guest)" = g1 ]
}

@test "prepare refuses an AMD VF whose partition gives another type, and changes nothing" {
        arefused g1 "pci=$DVF1,type=$CPX"
        [[ "$output" == *"$DVF1 is $DPX"* ]]
        [[ "$output" == *"never changes a partition"* ]]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$DPF/spatial_partition_mode")" = DPX ]
}

@test "a guest with an AMD VF and an mdev: prepare takes both, release gives both back" {
        run -0 aprepare g1 "pci=$CVF1,type=$CPX" "$U1,type=nvidia-35"
        mdev_exists "$U1"
        [ "$(record_get "$CVF1" guest)" = g1 ]
        run -0 release g1
        mdev_absent "$U1"
        record_absent "$CVF1"
        record_absent "$U1"
}

@test "release forgets the guest's AMD VF and leaves another guest's alone" {
        run -0 aprepare g1 "pci=$CVF1,type=$CPX"
        run -0 aprepare g2 "pci=$CVF2,type=$CPX"
        sim_counters_reset
        run -0 release g1
        [ "$(sim_counter_total writes)" -eq 0 ]
        record_absent "$CVF1"
        [ "$(record_get "$CVF2" guest)" = g2 ]
        run -0 aprepare g3 "pci=$CVF1,type=$CPX"
        [ "$(record_get "$CVF1" guest)" = g3 ]
}

@test "pick names an AMD VF that no guest holds, on a GPU of the type's partition" {
        run -0 "$MH_CLI" pick "$DPX"
        [ "$output" = "$DVF1" ]
        run -0 aprepare g1 "pci=$DVF1,type=$DPX"
        run -0 "$MH_CLI" pick "$DPX"
        [ "$output" = "$DVF2" ]
        run -0 aprepare g2 "pci=$DVF2,type=$DPX"
        run "$MH_CLI" pick "$DPX"
        [ "$status" -ne 0 ]
        [[ "$output" == *"no free VF of type $DPX"* ]]
        run -0 "$MH_CLI" pick "$CPX"
        [ "$output" = "$CVF1" ]
}

@test "pick places AMD VFs as the placement engine does: pack the fuller GPU, spread the emptier" {
        run -0 aprepare g1 "pci=$CVF31,type=$CPX"
        all_conf "[hooks]" "placement = pack"
        run -0 "$MH_CLI" pick "$CPX"
        [ "$output" = "$(basename "$(readlink "$SIM_SYS/bus/pci/devices/$CPF3/virtfn1")")" ]
        all_conf "[hooks]" "placement = spread"
        run -0 "$MH_CLI" pick "$CPX"
        [ "$output" = "$CVF1" ]
}

@test "migrate of a guest with an AMD VF is refused in one line, and nothing is claimed" {
        axml web1 "pci=$CVF1,type=$CPX" > "$BATS_TEST_TMPDIR/web1.xml"
        sim_counters_reset
        run hook web1 migrate begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"AMD MxGPU VF $CVF1, which cannot migrate"* ]]
        [ "$(sim_counter_total writes)" -eq 0 ]
        record_absent "$CVF1"
}

@test "restore of a guest with an AMD VF is refused in one line as migrate is" {
        axml web1 "pci=$CVF1,type=$CPX" > "$BATS_TEST_TMPDIR/web1.xml"
        run hook web1 restore begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"cannot migrate or be restored"* ]]
}

@test "list, types and inventory show the AMD VFs and GPUs beside the mdevs" {
        run -0 aprepare g1 "pci=$CVF1,type=$CPX" "$U1,type=nvidia-35"
        run -0 "$MH_CLI" list
        [ "$(printf '%s\n' "$output" | grep -c "^$CVF1 .*$CPF.*$CPX.*g1")" = 1 ]
        [ "$(printf '%s\n' "$output" | grep -c "$U1.*nvidia-35.*g1")" = 1 ]
        [ "$(printf '%s\n' "$output" | grep -c "$DPX")" = 2 ]
        run -0 "$MH_CLI" types --parent "$CPF"
        [[ "$output" == *"$CPX"*"AMD MI300X CPX"*"1/8 of the GPU"* ]]
        run -0 "$MH_CLI" inventory --json
        [ "$(jq -r --arg p "$DPF" '.parents[] | select(.parent == $p) | .total' <<<"$output")" = 2 ]
}

@test "check-config says in one line when an AMD GPU's partition does not give the type named for it" {
        config_types "$CPX" "$DPF"
        run "$MH_CLI" check-config
        [ "$status" -ne 0 ]
        [[ "$output" == *"$DPF"*"partitioned DPX into 2 VFs"*"$DPX"* ]]
}

@test "udev: an AMD VF bound to vfio-pci for its guest keeps the guest's record" {
        run -0 aprepare g1 "pci=$CVF1,type=$CPX"
        run env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION=bind SUBSYSTEM=pci \
                DEVPATH="/devices/pci0000:00/$CVF1" SEQNUM=1 "$MH_UDEV" "$CVF1"
        [ "$status" -eq 0 ]
        [ "$(record_get "$CVF1" state)" = assigned ]
        [ "$(record_get "$CVF1" guest)" = g1 ]
}

@test "inventory --placement gives each AMD GPU a trait of its partition's type, apart from Intel's and NVIDIA's" {
        run -0 "$MH_CLI" inventory --placement --hostname h
        [ "$(jq -r '.resource_providers[] | select(.name == "h_pci_0000_c2_00_0") | .traits[]' <<<"$output")" = CUSTOM_MDEV_AMD_MXGPU_2 ]
        [ "$(jq -r '.resource_providers[] | select(.name == "h_pci_0000_c2_00_0") | .inventories.VGPU.total' <<<"$output")" = 2 ]
        [ "$(jq -r '.resource_providers[] | select(.name == "h_pci_0000_c1_00_0") | .traits[]' <<<"$output")" = CUSTOM_MDEV_AMD_MXGPU_8 ]
}

@test "reconnect re-asserts a running guest's AMD VF in its record" {
        run -0 aprepare g1 "pci=$CVF1,type=$CPX"
        rm "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$CVF1"
        run hook g1 reconnect begin - < "$BATS_TEST_TMPDIR/g1.xml"
        [ "$status" -eq 0 ]
        [ "$(record_get "$CVF1" guest)" = g1 ]
        [ "$(record_get "$CVF1" state)" = assigned ]
}

@test "pick --xml gives an AMD VF as a managed hostdev, for libvirt to bind it to vfio-pci" {
        run -0 "$MH_CLI" pick --xml "$DPX"
        [[ "$output" == *"<hostdev mode=\"subsystem\" type=\"pci\" managed=\"yes\">"* ]]
        [[ "$output" == *"function=\"0x4\""* ]]
        [[ "$output" == *"<mh:vgpu pci=\"$DVF1\" type=\"$DPX\"/>"* ]]
}
