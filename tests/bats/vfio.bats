#!/usr/bin/env bats
# NVIDIA vGPU on the vendor-specific VFIO framework (vGPU 17+, issue 18):
# the simulator's model of it, then the hook, the CLI and the udev helper on
# hosts with VF vGPUs, alone and next to mdevs.

load common
load ../sim/sim

teardown() {
        sim_umount
}

PF1=0000:41:00.0
PF2=0000:c1:00.0
VF1=0000:41:00.4
VF2=0000:41:00.5
VF3=0000:41:00.6
Q4=1150 # NVIDIA L40S-4Q in the topology (4 GiB)
C4=1149 # NVIDIA L40S-4C (4 GiB)
Q8=1155 # NVIDIA L40S-8Q (8 GiB)

# write_errno TEXT FILE: one write(2); "ok" or the errno name.
write_errno() {
        local out
        if out=$(printf '%s' "$1" | dd of="$2" conv=notrunc status=none 2>&1); then
                echo ok
                return
        fi
        case "$out" in
        *"Invalid argument"*) echo EINVAL ;;
        *"Operation not permitted"*) echo EPERM ;;
        *"Input/output error"*) echo EIO ;;
        *"Permission denied"*) echo EACCES ;;
        *"Device or resource busy"*) echo EBUSY ;;
        *"No such device or address"*) echo ENXIO ;;
        *) echo "other: $out" ;;
        esac
}

cur() {
        echo "$SIM_SYS/bus/pci/devices/$1/nvidia/current_vgpu_type"
}

# ------------------------------------------------------------- simulator

@test "sim vfio: PFs bound to nvidia with VFs, no nvidia/ and no mdev types on the PF, no mdev_bus" {
        sim_mount nvidia-vfio
        [ ! -e "$SIM_SYS/class/mdev_bus" ]
        [ ! -e "$SIM_SYS/bus/mdev" ]
        pf=$SIM_SYS/bus/pci/devices/$PF1
        [ "$(cat "$pf/sriov_totalvfs")" = 16 ]
        [ "$(cat "$pf/sriov_numvfs")" = 16 ]
        [ "$(basename "$(readlink "$pf/driver")")" = nvidia ]
        [ "$(basename "$(readlink "$pf/virtfn0")")" = "$VF1" ]
        [ "$(basename "$(readlink "$pf/virtfn15")")" = 0000:41:02.3 ]
        [ ! -e "$pf/nvidia" ]
        [ ! -e "$pf/mdev_supported_types" ]
        vf=$SIM_SYS/bus/pci/devices/$VF1
        [ "$(basename "$(readlink "$vf/physfn")")" = "$PF1" ]
        [ "$(basename "$(readlink -f "$vf/driver")")" = nvidia ]
        ls "$vf/vfio-dev" | grep -q '^vfio[0-9]*$'
        [ -n "$(readlink "$vf/iommu_group")" ]
        for f in creatable_vgpu_types current_vgpu_type gpu_instance_id placement_id vgpu_params warm_update; do
                [ -e "$vf/nvidia/$f" ]
        done
        [ "$(sim_vf_type "$VF1")" = 0 ]
}

@test "sim vfio: creatable_vgpu_types has the driver's header and %-5d : NAME lines" {
        sim_mount nvidia-vfio
        run cat "$SIM_SYS/bus/pci/devices/$VF1/nvidia/creatable_vgpu_types"
        [ "${lines[0]}" = "ID    : vGPU Name" ]
        [ "${lines[1]}" = "1149  : NVIDIA L40S-4C" ]
        [ "${lines[2]}" = "1150  : NVIDIA L40S-4Q" ]
        [ "${#lines[@]}" = 5 ]
}

@test "sim vfio: one framebuffer size per GPU, same-size types mix, the list shrinks" {
        sim_mount nvidia-vfio
        [ "$(write_errno "$Q4" "$(cur "$VF1")")" = ok ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        # the programmed VF lists nothing; its siblings only the 4 GiB types
        [ -z "$(sim_vf_creatable "$VF1")" ]
        [ "$(sim_vf_creatable "$VF2" | tr '\n' ' ')" = "$C4 $Q4 " ]
        # another size on the same GPU: EIO; the other GPU is untouched
        [ "$(write_errno "$Q8" "$(cur "$VF2")")" = EIO ]
        [ "$(sim_vf_creatable 0000:c1:00.4 | wc -l)" = 4 ]
        # a 4C mixes with the 4Q
        [ "$(write_errno "$C4" "$(cur "$VF2")")" = ok ]
}

@test "sim vfio: capacity is the framebuffer: 12 x 4Q on 48 GiB, then only the header" {
        sim_mount nvidia-vfio
        for i in $(seq 0 11); do
                vf=$(basename "$(readlink "$SIM_SYS/bus/pci/devices/$PF1/virtfn$i")")
                [ "$(write_errno "$Q4" "$(cur "$vf")")" = ok ]
        done
        vf13=$(basename "$(readlink "$SIM_SYS/bus/pci/devices/$PF1/virtfn12")")
        [ "$(cat "$SIM_SYS/bus/pci/devices/$vf13/nvidia/creatable_vgpu_types")" = "ID    : vGPU Name" ]
        [ "$(write_errno "$Q4" "$(cur "$vf13")")" = EIO ]
}

@test "sim vfio: 8Q gives 6 per GPU" {
        sim_mount nvidia-vfio
        for i in $(seq 0 5); do
                vf=$(basename "$(readlink "$SIM_SYS/bus/pci/devices/$PF2/virtfn$i")")
                [ "$(write_errno "$Q8" "$(cur "$vf")")" = ok ]
        done
        vf=$(basename "$(readlink "$SIM_SYS/bus/pci/devices/$PF2/virtfn6")")
        [ "$(write_errno "$Q8" "$(cur "$vf")")" = EIO ]
}

@test "sim vfio: the shipped driver's errnos on current_vgpu_type" {
        sim_mount nvidia-vfio
        [ "$(write_errno "abc" "$(cur "$VF1")")" = EINVAL ]
        [ "$(write_errno " 1" "$(cur "$VF1")")" = EINVAL ]
        [ "$(write_errno 0 "$(cur "$VF1")")" = EPERM ]     # 0 without a vGPU
        [ "$(write_errno 4242 "$(cur "$VF1")")" = EIO ]    # unknown ID
        [ "$(write_errno "$Q4" "$(cur "$VF1")")" = ok ]
        [ "$(write_errno "$Q4" "$(cur "$VF1")")" = EPERM ] # an ID on a VF with a vGPU
        sim_vf_open "$VF1"
        [ "$(write_errno 0 "$(cur "$VF1")")" = EPERM ]     # 0 while a guest holds it
        sim_vf_close "$VF1"
        [ "$(write_errno 0 "$(cur "$VF1")")" = ok ]
        [ "$(sim_vf_type "$VF1")" = 0 ]
}

@test "sim vfio: gpu_instance_id, placement_id, vgpu_params fail with ENXIO without a vGPU" {
        sim_mount nvidia-vfio
        run cat "$SIM_SYS/bus/pci/devices/$VF1/nvidia/vgpu_params"
        [ "$status" -ne 0 ]
        [[ "$output" == *"No such device or address"* ]]
        sim_vf_program "$VF1" "$Q4"
        cat "$SIM_SYS/bus/pci/devices/$VF1/nvidia/placement_id"
}

@test "sim vfio: create-fail injects an errno on a VF's program" {
        sim_mount nvidia-vfio
        sim_create_fail EIO "$VF1"
        [ "$(write_errno "$Q4" "$(cur "$VF1")")" = EIO ]
        [ "$(write_errno "$Q4" "$(cur "$VF1")")" = ok ]
}

@test "sim vfio: sriov_numvfs 0 is refused while a VF carries a vGPU, then removes the VFs" {
        sim_mount nvidia-vfio
        sim_vf_program "$VF1" "$Q4"
        [ "$(write_errno 0 "$SIM_SYS/bus/pci/devices/$PF1/sriov_numvfs")" = EBUSY ]
        sim_vf_program "$VF1" 0
        [ "$(write_errno 0 "$SIM_SYS/bus/pci/devices/$PF1/sriov_numvfs")" = ok ]
        [ ! -e "$SIM_SYS/bus/pci/devices/$VF1" ]
        [ ! -e "$SIM_SYS/bus/pci/devices/$PF1/virtfn0" ]
        [ "$(write_errno 4 "$SIM_SYS/bus/pci/devices/$PF1/sriov_numvfs")" = ok ]
        [ "$(sim_vf_type "$VF1")" = 0 ]
}

@test "sim vfio: a mixed host has mdev parents and VFIO VFs; an empty mdev_bus is possible too" {
        sim_mount nvidia-mixed
        [ "$(ls "$SIM_SYS/class/mdev_bus" | tr '\n' ' ')" = "0000:84:00.0 0000:85:00.0 " ]
        [ -e "$SIM_SYS/bus/pci/devices/$VF1/nvidia/current_vgpu_type" ]
        sim_umount
        grep -v '^mdev_bus absent' "$SIM_DIR/topologies/nvidia-vfio.conf" > "$BATS_TEST_TMPDIR/empty.conf"
        sim_mount "$BATS_TEST_TMPDIR/empty.conf"
        [ -d "$SIM_SYS/class/mdev_bus" ]
        [ -z "$(ls "$SIM_SYS/class/mdev_bus")" ]
}
