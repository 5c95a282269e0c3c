#!/usr/bin/env bats
# NVIDIA vGPU on the vendor-specific VFIO framework (vGPU 17+):
# the simulator's model of it, then the hook, the CLI and the udev helper on
# hosts with VF vGPUs, alone and next to mdevs.

load hook-helpers

PF1=0000:41:00.0
PF2=0000:c1:00.0
VF1=0000:41:00.4
VF2=0000:41:00.5
VF3=0000:41:00.6
Q4=1150 # NVIDIA L40S-4Q in the topology (4 GiB)
C4=1149 # NVIDIA L40S-4C (4 GiB)
Q8=1155 # NVIDIA L40S-8Q (8 GiB)

# vfio_conf: the config for nvidia-vfio: nvidia-$Q4 on PF1's VFs, nvidia-$Q8
# on PF2's.
vfio_conf() {
        config_types "nvidia-$Q4" "$PF1" "nvidia-$Q8" "$PF2"
}

# mixed_conf [ADDRESSES]: the config for nvidia-mixed: nvidia-35 on
# ADDRESSES (default: $P84), nvidia-$Q4 on PF1's VFs.
mixed_conf() {
        config_types nvidia-35 "${1:-$P84}" "nvidia-$Q4" "$PF1"
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

# ------------------------------------------------------------- prepare

@test "prepare programs an unprogrammed VF with the entry's type and records it (created)" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" guest)" = g1 ]
        [ "$(record_get "$VF1" parent)" = "$PF1" ]
        [ "$(record_get "$VF1" type)" = "nvidia-$Q4" ]
        [ "$(record_get "$VF1" state)" = assigned ]
        [ "$(record_get "$VF1" origin)" = created ]
}

@test "prepare without an entry uses the config's type for the VF's PF" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=0000:c1:00.4,nometa"
        [ "$status" -eq 0 ]
        [ "$(sim_vf_type 0000:c1:00.4)" = "$Q8" ]
        [ "$(record_get 0000:c1:00.4 type)" = "nvidia-$Q8" ]
}

@test "prepare with class= takes an enabled nvidia-<ID> type of that class that is creatable" {
        sim_mount nvidia-vfio
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-$Q8, nvidia-$Q4

	[mdev_nvidia-$Q8]
	device_addresses = $PF2
	mdev_class = CUSTOM_BIG

	[mdev_nvidia-$Q4]
	device_addresses = $PF1
	mdev_class = CUSTOM_BIG
	EOF
        sim_vf_program "$VF2" "$Q4" # the GPU holds 4 GiB vGPUs: 8Q is not creatable
        run vprepare g1 "pci=$VF1,class=CUSTOM_BIG"
        [ "$status" -eq 0 ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
}

@test "prepare borrows a VF that already carries the type; release leaves it programmed" {
        sim_mount nvidia-vfio
        vfio_conf
        sim_vf_program "$VF1" "$Q4"
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        [ "$(record_get "$VF1" origin)" = borrowed ]
        run release g1
        [ "$status" -eq 0 ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ ! -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$VF1" ]
}

@test "prepare refuses a VF another guest holds, in one line naming the guest" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        run vprepare g2 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -ne 0 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"g2"*"$VF1 is held by guest 'g1'"* ]]
        [ "$(record_get "$VF1" guest)" = g1 ]
        # and g2's failed start's release does not touch g1's vGPU
        run release g2
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" guest)" = g1 ]
}

@test "prepare refuses a VF that carries another type" {
        sim_mount nvidia-vfio
        vfio_conf
        sim_vf_program "$VF1" "$C4"
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -ne 0 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"VF $VF1 carries vGPU type nvidia-$C4, but the domain asks for nvidia-$Q4"* ]]
        [ "$(sim_vf_type "$VF1")" = "$C4" ]
        [ ! -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$VF1" ]
}

@test "prepare refuses a type that is not creatable there and lists what is" {
        sim_mount nvidia-vfio
        vfio_conf
        sim_vf_program "$VF2" "$Q4"
        run vprepare g1 "pci=$VF1,type=nvidia-$Q8"
        [ "$status" -ne 0 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"nvidia-$Q8 is not creatable on VF $VF1 now"*"creatable there: nvidia-$C4 (NVIDIA L40S-4C), nvidia-$Q4 (NVIDIA L40S-4Q)"* ]]
        [ "$(sim_vf_type "$VF1")" = 0 ]
}

@test "prepare refuses an <mh:vgpu> entry on a device that is not such a VF" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=0000:02:00.0,type=nvidia-$Q4"
        [ "$status" -ne 0 ]
        [[ "$output" == *"0000:02:00.0 has an <mh:vgpu> entry but is not a VF"* ]]
}

@test "an ordinary PCI passthrough without an entry is left alone" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=0000:02:00.0,nometa"
        [ "$status" -eq 0 ]
        [ -z "$(ls "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" 2>/dev/null)" ]
}

@test "prepare: all or nothing with mdevs and other vGPUs (mixed host)" {
        sim_mount nvidia-mixed
        mixed_conf "$P84, $P85"
        # the second VF's program fails (the driver's EIO): nothing is left
        sim_create_fail EIO "$VF2"
        run vprepare g1 "$U1,type=nvidia-35" "pci=$VF1,type=nvidia-$Q4" "pci=$VF2,type=nvidia-$Q4"
        [ "$status" -ne 0 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"cannot program VF $VF2 with nvidia-$Q4"* ]]
        mdev_absent "$U1"
        [ "$(sim_vf_type "$VF1")" = 0 ]
        [ "$(sim_vf_type "$VF2")" = 0 ]
        [ -z "$(ls "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" 2>/dev/null)" ]
        # and then it works: an mdev and two vGPUs for one guest
        run vprepare g1 "$U1,type=nvidia-35" "pci=$VF1,type=nvidia-$Q4" "pci=$VF2,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        mdev_exists "$U1"
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(sim_vf_type "$VF2")" = "$Q4" ]
        run release g1
        [ "$status" -eq 0 ]
        mdev_absent "$U1"
        [ "$(sim_vf_type "$VF1")" = 0 ]
        [ "$(sim_vf_type "$VF2")" = 0 ]
        [ -z "$(ls "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" 2>/dev/null)" ]
}

@test "prepare: an mdev that fails rolls back the vGPUs" {
        sim_mount nvidia-mixed
        mixed_conf
        sim_create_fail EIO "$P84"
        run vprepare g1 "$U1,type=nvidia-35" "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -ne 0 ]
        mdev_absent "$U1"
        [ "$(sim_vf_type "$VF1")" = 0 ]
        [ -z "$(ls "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" 2>/dev/null)" ]
}

# ------------------------------------------------------------- release

@test "release clears the VFs it programmed" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        run release g1
        [ "$status" -eq 0 ]
        [ "$(sim_vf_type "$VF1")" = 0 ]
        [ ! -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$VF1" ]
}

@test "release = keep leaves the VF programmed and free; the next guest reuses it (created)" {
        sim_mount nvidia-vfio
        vfio_conf
        printf '\n[hooks]\nrelease = keep\n' >> "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        run release g1
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" state)" = free ]
        [ -z "$(record_get "$VF1" guest)" ]
        run vprepare g2 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        [ "$(record_get "$VF1" guest)" = g2 ]
        [ "$(record_get "$VF1" origin)" = created ]
}

@test "release: a VF a guest still holds open is retried, then marked remove_pending" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        sim_vf_open "$VF1"
        run release g1
        [ "$status" -eq 0 ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" remove_pending)" = yes ]
        [ "$(record_get "$VF1" state)" = free ]
}

@test "after a reboot the VF is unprogrammed; the next start programs it again" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        # reboot: a new boot id, VFs come back without vGPUs
        sim_new_boot
        sim_vf_program "$VF1" 0
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" origin)" = created ]
        [ "$(record_get "$VF1" boot_id)" = "$(cat "$MDEV_HOOKS_ROOT/proc/sys/kernel/random/boot_id")" ]
}

@test "a guest with neither mdevs nor vGPUs does not load the worker; one with managed='no' does" {
        sim_mount nvidia-vfio
        vfio_conf
        echo "[nonsense" >> "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf" # a worker would refuse it
        run vprepare g1 "pci=0000:02:00.0,nometa,managed"
        [ "$status" -eq 0 ]
        run vprepare g1
        [ "$status" -eq 0 ]
        run vprepare g1 "pci=$VF1,nometa"
        [ "$status" -ne 0 ]
}

# ------------------------------------------------------------- migrate / restore

# two hosts: A (source) and B (destination), both nvidia-vfio unless given
two_hosts() {
        A="$BATS_TEST_TMPDIR/a"
        B="$BATS_TEST_TMPDIR/b"
        T="$BATS_TEST_TMPDIR"
        sim_mount "${1:-nvidia-vfio}" "$A"
        vfio_conf
        sim_mount "${2:-nvidia-vfio}" "$B"
        vfio_conf
}

@test "migrate: the same VF address is free here: programmed as incoming, XML unchanged" {
        two_hosts
        sim_use "$A"
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        migrate_to_b g1
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" state)" = incoming ]
        [ "$(record_get "$VF1" guest)" = g1 ]
        # prepare on B makes it assigned (reused: mdev-hooks programmed it)
        run hook g1 prepare begin - < "$T/g1.b.xml"
        [ "$status" -eq 0 ]
        [ "$(record_get "$VF1" state)" = assigned ]
        [ "$(record_get "$VF1" origin)" = created ]
}

@test "migrate from a host whose source VF is taken here: another VF, hostdev and metadata rewritten" {
        two_hosts
        sim_use "$A"
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        sim_use "$B"
        run vprepare other "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        migrate_to_b g1
        [ "$status" -eq 0 ]
        [ -n "$output" ]
        # pack: the PF that already holds a vGPU of the type, its next free VF
        [ "$(record_get "$VF2" guest)" = g1 ]
        [ "$(record_get "$VF2" state)" = incoming ]
        [ "$(sim_vf_type "$VF2")" = "$Q4" ]
        [ "$(record_get "$VF1" guest)" = other ]
        grep -q "<address domain='0x0000' bus='0x41' slot='0x00' function='0x5'/>" "$T/g1.b.xml" ||
                grep -q 'domain="0x0000" bus="0x41" slot="0x00" function="0x5"' "$T/g1.b.xml"
        grep -q "pci=\"$VF2\"" "$T/g1.b.xml"
        ! grep -q "$VF1" "$T/g1.b.xml"
        # the rewritten XML starts the guest on B
        run hook g1 prepare begin - < "$T/g1.b.xml"
        [ "$status" -eq 0 ]
        [ "$(record_get "$VF2" state)" = assigned ]
}

@test "migrate places by pack or spread when the incoming VF address is no VF here" {
        two_hosts
        sim_use "$B"
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-$Q4

	[mdev_nvidia-$Q4]
	device_addresses = $PF1, $PF2
	EOF
        sim_vf_program "$VF2" "$Q4" # by hand: PF1 holds one vGPU of the type
        vxml g1 "pci=0000:05:00.4,type=nvidia-$Q4" > "$T/g1.xml"
        migrate_to_b g1
        [ "$status" -eq 0 ]
        [ "$(record_get "$VF1" guest)" = g1 ] # pack: PF1, its first free VF
        grep -q "pci=\"$VF1\"" "$T/g1.b.xml"
        run hook g1 release end failed < "$T/g1.b.xml"
        [ "$(sim_vf_type "$VF1")" = 0 ]
        printf '\n[hooks]\nplacement = spread\n' >> "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        migrate_to_b g1
        [ "$status" -eq 0 ]
        [ "$(record_get 0000:c1:00.4 guest)" = g1 ] # spread: the emptiest PF
        [ "$(sim_vf_type 0000:c1:00.4)" = "$Q4" ]
}

@test "migrate refuses when no VF here can take the type, naming each PF; nothing is left" {
        two_hosts
        sim_use "$B"
        # PF1 (nvidia-Q4's GPU) holds 8 GiB vGPUs: 4Q is not creatable anywhere
        sim_vf_program 0000:41:00.4 "$Q8"
        sim_use "$A"
        run vprepare g1 "$U1,type=nvidia-35" 2>/dev/null || true
        vxml g1 "pci=$VF2,type=nvidia-$Q4" > "$T/g1.xml"
        migrate_to_b g1
        [ "$status" -ne 0 ]
        [[ "$stderr" == *"no VF for nvidia-$Q4"*"$PF1 cannot take nvidia-$Q4"* ]]
        [ -z "$(ls "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" 2>/dev/null)" ]
}

@test "migrate with max_instances reached refuses it" {
        two_hosts
        sim_use "$B"
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-$Q4

	[mdev_nvidia-$Q4]
	device_addresses = $PF1
	max_instances = 1
	EOF
        run vprepare other "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        vxml g1 "pci=$VF1,type=nvidia-$Q4" > "$T/g1.xml"
        migrate_to_b g1
        [ "$status" -ne 0 ]
        [[ "$stderr" == *"max_instances = 1"* ]]
}

@test "migrate: an mdev that cannot be placed rolls back the vGPU (mixed hosts)" {
        two_hosts nvidia-mixed nvidia-mixed
        for h in "$A" "$B"; do
                sim_use "$h"
                config_write <<-EOF
		[devices]
		enabled_mdev_types = nvidia-35, nvidia-$Q4

		[mdev_nvidia-35]
		device_addresses = $P84

		[mdev_nvidia-$Q4]
		device_addresses = $PF1
		EOF
        done
        sim_use "$A"
        run vprepare g1 "$U1,type=nvidia-35" "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        # on B both work: the mdev and the VF
        migrate_to_b g1
        [ "$status" -eq 0 ]
        [ "$(record_get "$VF1" state)" = incoming ]
        [ "$(record_get "$U1" state)" = incoming ]
        run hook g1 release end failed < "$T/g1.xml"
        [ "$(sim_vf_type "$VF1")" = 0 ]
        mdev_absent "$U1"
        # a vGPU that cannot be placed: the mdev is rolled back
        sim_vf_program 0000:41:00.4 "$Q8"
        migrate_to_b g1
        [ "$status" -ne 0 ]
        mdev_absent "$U1"
        [ -z "$(ls "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" 2>/dev/null)" ]
}

@test "restore: the same rules as migrate" {
        two_hosts
        sim_use "$B"
        run vprepare other "pci=$VF1,type=nvidia-$Q4"
        vxml g1 "pci=$VF1,type=nvidia-$Q4" > "$T/g1.xml"
        migrate_to_b g1 restore
        [ "$status" -eq 0 ]
        grep -q "pci=\"$VF2\"" "$T/g1.b.xml"
}

# ------------------------------------------------------------- CLI

@test "pick prints a free VF for the type as the hook would place it; --xml the hostdev and metadata" {
        sim_mount nvidia-vfio
        vfio_conf
        run "$MH_CLI" pick "nvidia-$Q4"
        [ "$status" -eq 0 ]
        [ "$output" = "$VF1" ]
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        run "$MH_CLI" pick "nvidia-$Q4"
        [ "$output" = "$VF2" ]
        run "$MH_CLI" pick "nvidia-$Q8"
        [ "$output" = "0000:c1:00.4" ]
        run --separate-stderr "$MH_CLI" pick --xml "nvidia-$Q4"
        [ "$status" -eq 0 ]
        [[ "$output" == *"<hostdev mode=\"subsystem\" type=\"pci\" managed=\"no\">"* ]]
        [[ "$output" == *"<address domain=\"0x0000\" bus=\"0x41\" slot=\"0x00\" function=\"0x5\"/>"* ]]
        [[ "$output" == *"<mh:vgpu pci=\"$VF2\" type=\"nvidia-$Q4\"/>"* ]]
        # as its usage says, --xml may also follow TYPE
        xml="$output"
        run -0 --separate-stderr "$MH_CLI" pick "nvidia-$Q4" --xml
        [ "$output" = "$xml" ]
        # what --xml prints makes a guest that starts
        { echo "<domain type='kvm'><name>g2</name><metadata>"
          printf '%s\n' "$output" | sed -n '/<mh:mdevs/,/<\/mh:mdevs>/p'
          echo "</metadata><devices>"
          printf '%s\n' "$output" | sed -n '/<hostdev/,/<\/hostdev>/p'
          echo "</devices></domain>"; } > "$BATS_TEST_TMPDIR/g2.xml"
        run hook g2 prepare begin - < "$BATS_TEST_TMPDIR/g2.xml"
        [ "$status" -eq 0 ]
        [ "$(sim_vf_type "$VF2")" = "$Q4" ]
}

@test "pick refuses a type that is not enabled, an mdev type, and a full host, saying why" {
        sim_mount nvidia-vfio
        vfio_conf
        run "$MH_CLI" pick nvidia-9999
        [ "$status" -eq 1 ]
        [[ "$output" == *"not enabled"* ]]
        run "$MH_CLI" pick mtty-1
        [ "$status" -eq 2 ]
        for i in $(seq 0 5); do
                vf=$(basename "$(readlink "$SIM_SYS/bus/pci/devices/$PF2/virtfn$i")")
                sim_vf_program "$vf" "$Q8"
        done
        run "$MH_CLI" pick "nvidia-$Q8"
        [ "$status" -eq 1 ]
        [[ "$output" == *"no VF for nvidia-$Q8: $PF2 cannot take nvidia-$Q8 now (full)"* ]]
}

@test "list shows VFIO vGPUs beside mdevs with state and owner; a VF programmed by hand is foreign" {
        sim_mount nvidia-mixed
        mixed_conf
        run vprepare g1 "$U1,type=nvidia-35" "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        sim_vf_program 0000:c1:00.4 "$Q8"
        run "$MH_CLI" list
        [ "$status" -eq 0 ]
        [[ "$output" == *"$VF1"*"$PF1"*"nvidia-$Q4"*"assigned"*"created"*"g1"* ]]
        [[ "$output" == *"0000:c1:00.4"*"$PF2"*"nvidia-$Q8"*"foreign"* ]]
        [[ "$output" == *"$U1"*"$P84"*"nvidia-35"*"assigned"*"g1"* ]]
        run "$MH_CLI" list --json
        [ "$status" -eq 0 ]
        [ "$(printf '%s' "$output" | jq -r ".mdevs[] | select(.uuid == \"$VF1\") | .guest")" = g1 ]
}

@test "types lists each VFIO PF with the types its VFs carry or can create, beside mdev parents" {
        sim_mount nvidia-mixed
        vfio_conf
        sim_vf_program "$VF1" "$Q4"
        run "$MH_CLI" types
        [ "$status" -eq 0 ]
        [[ "$output" == *"$PF1  nvidia-$C4"*"15  vfio-pci  NVIDIA L40S-4C"* ]]
        [[ "$output" == *"$PF1  nvidia-$Q4"*"15  vfio-pci  NVIDIA L40S-4Q  NVIDIA VFIO framework: 1 on VFs, 15 of 16 VFs free"* ]]
        [[ "$output" != *"$PF1  nvidia-$Q8"* ]] # another size: not creatable on that GPU now
        [[ "$output" == *"$PF2  nvidia-$Q8"*"16"* ]]
        [[ "$output" == *"0000:84:00.0  nvidia-35"* ]]
        [ -z "$(printf '%s\n' "$output" | grep "^$VF1")" ] # VFs are no parents of their own
        run "$MH_CLI" types --json
        [ "$(printf '%s' "$output" | jq -r ".parents[] | select(.parent == \"$PF1\") | .types[] | select(.id == \"nvidia-$Q4\") | .available_instances")" = 15 ]
}

@test "inventory has one provider per PF with Nova's arithmetic; --placement names it as Nova would" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        sim_vf_program "$VF2" "$Q4"
        run "$MH_CLI" inventory --json
        [ "$status" -eq 0 ]
        j=$(printf '%s' "$output" | jq -c ".parents[] | select(.parent == \"$PF1\") | [.type, .total, .used, .free]")
        [ "$j" = "[\"nvidia-$Q4\",16,2,14]" ]
        run "$MH_CLI" inventory --placement --hostname h1
        [ "$status" -eq 0 ]
        [ "$(printf '%s' "$output" | jq -r '.resource_providers[].name' | sort | tr '\n' ' ')" = "h1_pci_0000_41_00_0 h1_pci_0000_c1_00_0 " ]
        [ "$(printf '%s' "$output" | jq -r '.resource_providers[] | select(.name == "h1_pci_0000_41_00_0") | .usages.VGPU')" = 2 ]
}

@test "inventory: max_instances caps a PF the way Nova caps a parent" {
        sim_mount nvidia-vfio
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-$Q4

	[mdev_nvidia-$Q4]
	device_addresses = $PF1, $PF2
	max_instances = 20
	EOF
        run "$MH_CLI" inventory --json
        [ "$(printf '%s' "$output" | jq -c "[.parents[] | [.parent, .total]]")" = "[[\"$PF1\",16],[\"$PF2\",0]]" ]
}

@test "placement never takes a PF that max_instances caps in the inventory, even where spread would" {
        sim_mount nvidia-vfio
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-$Q4

	[mdev_nvidia-$Q4]
	device_addresses = $PF1, $PF2
	max_instances = 20

	[hooks]
	placement = spread
	EOF
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        # PF2 is emptier, but its 16 would take the type past 20: the
        # inventory gives it none, and so does placement
        run "$MH_CLI" inventory --json
        [ "$(printf '%s' "$output" | jq -c "[.parents[] | [.parent, .total]]")" = "[[\"$PF1\",16],[\"$PF2\",0]]" ]
        run -0 "$MH_CLI" pick "nvidia-$Q4"
        [[ "$output" == "$VF2"* ]]
}

@test "check-config checks PFs of the VFIO framework: the type must be creatable on its VFs" {
        sim_mount nvidia-vfio
        vfio_conf
        run "$MH_CLI" check-config
        [ "$status" -eq 0 ]
        sim_vf_program "$VF1" "$Q8" # the GPU now holds 8 GiB vGPUs: 4Q no longer fits
        run "$MH_CLI" check-config
        [ "$status" -eq 2 ]
        [[ "$output" == *"'$PF1' in device_addresses of nvidia-$Q4 cannot create nvidia-$Q4 now (its VFs offer: nvidia-$Q8, nvidia-1156; 15 of 16 VFs free)"* ]]
}

@test "reconcile reports a programmed VF that no guest uses, and --apply clears what mdev-hooks programmed" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        # libvirt's test driver knows no guest g1: its vGPU is unused
        run "$MH_CLI" reconcile --connect test:///default
        [ "$status" -ne 0 ]
        [[ "$output" == *"$VF1"* ]]
        run "$MH_CLI" reconcile --connect test:///default --apply
        [ "$(sim_vf_type "$VF1")" = 0 ]
        [ ! -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$VF1" ]
}

# ------------------------------------------------------------- udev

# vf_event ACTION VF: the udev helper as udev runs it for a VF's pci event.
vf_event() {
        run env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION="$1" SUBSYSTEM=pci \
                DEVPATH="/devices/pci0000:00/$2" SEQNUM=1 "$MH_UDEV" "$2"
}

@test "udev: a VF that comes back after sriov-manage makes its guest's record lost; the next start programs it" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        sim_vf_program "$VF1" 0 # sriov-manage -d / -e: the VF comes back empty
        vf_event bind "$VF1"
        [ "$status" -eq 0 ]
        [ "$(record_get "$VF1" state)" = lost ]
        [ "$(record_get "$VF1" guest)" = g1 ]
        # another guest may have the VF now; g1's next start would program another one
        run vprepare g2 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        [ "$(record_get "$VF1" guest)" = g2 ]
}

@test "udev: a free kept VF that comes back empty loses its record; a record that agrees is left alone" {
        sim_mount nvidia-vfio
        vfio_conf
        printf '\n[hooks]\nrelease = keep\n' >> "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        run vprepare g2 "pci=$VF2,type=nvidia-$Q4"
        run release g1
        [ "$(record_get "$VF1" state)" = free ]
        vf_event add "$VF2"
        [ "$status" -eq 0 ]
        [ "$(record_get "$VF2" state)" = assigned ]
        sim_vf_program "$VF1" 0
        vf_event add "$VF1"
        [ "$status" -eq 0 ]
        [ ! -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$VF1" ]
        # a VF with no record: nothing, no lock
        vf_event add "$VF3"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
}

@test "udev: a guest's VF bound for it agrees with its record, and the event does not wait for the lock" {
        sim_mount nvidia-vfio
        vfio_conf
        printf '\n[hooks]\nlock_timeout = 1\n' >> "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        lock_hold "$MDEV_HOOKS_ROOT/run/mdev-hooks/lock" "prepare other"
        vf_event bind "$VF1"
        lock_let_go
        echo "$output"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(record_get "$VF1" state)" = assigned ]
        [ "$(record_get "$VF1" guest)" = g1 ]
}

@test "udev: after a reboot a VF's record from the earlier boot is lost, and the guest's start programs it again" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        sim_new_boot
        sim_vf_program "$VF1" 0
        vf_event add "$VF1"
        [ "$(record_get "$VF1" state)" = lost ]
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" state)" = assigned ]
}

@test "udev rules run the helper for a VF of the VFIO framework" {
        grep -q 'TEST=="nvidia/current_vgpu_type", RUN+=' "$MH_SOURCE_DIR/udev-rules/60-mdev-hooks.rules.in"
}

@test "reconnect re-asserts a running guest's VF claims" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        rm "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$VF1"
        run hook g1 reconnect begin - < "$BATS_TEST_TMPDIR/g1.xml"
        [ "$status" -eq 0 ]
        [ "$(record_get "$VF1" guest)" = g1 ]
        [ "$(record_get "$VF1" state)" = assigned ]
}

@test "list, types and inventory work on a host without /sys/class/mdev_bus, and with an empty one" {
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        for cmd in list types inventory; do
                run "$MH_CLI" "$cmd"
                [ "$status" -eq 0 ]
                [[ "$output" == *"$PF1"* ]]
        done
        sim_umount
        grep -v '^mdev_bus absent' "$SIM_DIR/topologies/nvidia-vfio.conf" > "$BATS_TEST_TMPDIR/empty.conf"
        sim_mount "$BATS_TEST_TMPDIR/empty.conf"
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        for cmd in list types inventory; do
                run "$MH_CLI" "$cmd"
                [ "$status" -eq 0 ]
                [[ "$output" == *"$PF1"* ]]
        done
}

@test "crash: a prepare killed after programming a VF leaves a record that release clears" {
        needs_crashpoints
        sim_mount nvidia-vfio
        vfio_conf
        vxml g1 "pci=$VF1,type=nvidia-$Q4" > "$BATS_TEST_TMPDIR/g1.xml"
        run env MDEV_HOOKS_CRASH_AT=prepare-after-program "$MH_QEMU_HOOK" g1 prepare begin - < "$BATS_TEST_TMPDIR/g1.xml"
        [ "$status" -ne 0 ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" origin)" = created ]
        # libvirt runs release after a failed prepare
        run release g1
        [ "$status" -eq 0 ]
        [ "$(sim_vf_type "$VF1")" = 0 ]
        [ ! -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$VF1" ]
}

@test "crash: a release killed after clearing a VF leaves a record the next release forgets" {
        needs_crashpoints
        sim_mount nvidia-vfio
        vfio_conf
        run vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        run env MDEV_HOOKS_CRASH_AT=release-after-clear "$MH_QEMU_HOOK" g1 release end - < "$BATS_TEST_TMPDIR/g1.xml"
        [ "$(sim_vf_type "$VF1")" = 0 ]
        [ -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$VF1" ]
        run release g1
        [ ! -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$VF1" ]
        # and another guest may have it
        run vprepare g2 "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
}

@test "udev: after a reboot an mdev parent's registration sweeps VF records too (mixed host)" {
        sim_mount nvidia-mixed
        mixed_conf
        printf '\n[hooks]\nrelease = keep\n' >> "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run vprepare g1 "$U1,type=nvidia-35" "pci=$VF1,type=nvidia-$Q4"
        [ "$status" -eq 0 ]
        run vprepare g2 "pci=$VF2,type=nvidia-$Q4"
        run release g2 # kept free
        [ "$(record_get "$VF2" state)" = free ]
        # reboot: no mdevs, no vGPUs, a new boot id; the M60 registers
        sim_new_boot
        sim_unregister "$P84"
        sim_vf_program "$VF1" 0
        sim_vf_program "$VF2" 0
        sim_register "$P84"
        run env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION=change SUBSYSTEM=pci \
                DEVPATH="/devices/pci0000:00/$P84" MDEV_STATE=registered SEQNUM=1 "$MH_UDEV" "$P84"
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = lost ]
        [ "$(record_get "$VF1" state)" = lost ]
        [ "$(record_get "$VF1" guest)" = g1 ]
        [ ! -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$VF2" ]
        # g1 starts again: its mdev is made, its VF programmed
        run hook g1 prepare begin - < "$BATS_TEST_TMPDIR/g1.xml"
        [ "$status" -eq 0 ]
        mdev_exists "$U1"
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" origin)" = created ]
}

@test "parallel: guests starting at once on one VF: one gets it, the others are refused naming it" {
        sim_mount nvidia-vfio
        vfio_conf
        for g in p1 p2 p3 p4; do
                vxml "$g" "pci=$VF1,type=nvidia-$Q4" > "$BATS_TEST_TMPDIR/$g.xml"
        done
        for g in p1 p2 p3 p4; do
                "$MH_QEMU_HOOK" "$g" prepare begin - < "$BATS_TEST_TMPDIR/$g.xml" > "$BATS_TEST_TMPDIR/$g.out" 2>&1 &
        done
        wait || true
        winner=$(record_get "$VF1" guest)
        [ -n "$winner" ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        for g in p1 p2 p3 p4; do
                [ "$g" = "$winner" ] && continue
                grep -q "is held by guest '$winner'" "$BATS_TEST_TMPDIR/$g.out"
        done
}

@test "check-config: a GPU bound to nvidia without VFs is told to enable them" {
        sim_mount nvidia-vfio
        vfio_conf
        printf 0 > "$SIM_SYS/bus/pci/devices/$PF2/sriov_numvfs"
        run "$MH_CLI" check-config
        [ "$status" -eq 2 ]
        [[ "$output" == *"'$PF2' in device_addresses of nvidia-$Q8 is a GPU bound to nvidia without VFs: enable them (sriov-manage -e $PF2"* ]]
}

@test "metrics counts a guest's VFIO vGPU by state and gives each PF inventory's numbers" {
        sim_mount nvidia-vfio
        vfio_conf
        run -0 vprepare g1 "pci=$VF1,type=nvidia-$Q4"
        run -0 "$MH_CLI" metrics
        metrics="$output"
        grep -qxF 'mdev_hooks_mdevs{state="assigned"} 1' <<<"$metrics"
        run -0 "$MH_CLI" inventory --json
        read -r total used free < <(jq -r ".parents[] | select(.parent == \"$PF1\") | \"\(.total) \(.used) \(.free)\"" <<<"$output")
        [ "$used" = 1 ]
        grep -qE "^mdev_hooks_parent_capacity_vgpus\{.*parent=\"$PF1\".*\} $total\$" <<<"$metrics"
        grep -qE "^mdev_hooks_parent_used_vgpus\{.*parent=\"$PF1\".*\} 1\$" <<<"$metrics"
        grep -qE "^mdev_hooks_parent_free_vgpus\{.*parent=\"$PF1\".*\} $free\$" <<<"$metrics"
}
