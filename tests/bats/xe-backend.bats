#!/usr/bin/env bats
# Intel xe SR-IOV (doc/design.md §9): the simulator's model of sriov_admin/
# and sriov_numvfs (tests/sim/sim-xe.c) on tests/sim/topologies/intel-xe.conf,
# errors included; then the backend (lib/backend-xe.c, lib/xesriov.c): a
# guest gets a whole VF, of the type its VRAM quota gives (intel-xe-<MiB>),
# as a <hostdev type='pci' managed='yes'> with an <mh:vgpu> entry. Tested
# against the model only.

load hook-helpers
load whole-helpers

XPF=0000:03:00.0 # 24 GiB, 4 VFs possible, none enabled
NOPF=0000:04:00.0 # not in PF mode, an older kernel
IGPU=0000:05:00.0 # no VRAM, 2 VFs enabled
GIB=1073741824
XVF1=0000:03:00.4 # 8 GiB once provisioned
XVF2=0000:03:00.5 # 8 GiB
XVF3=0000:03:00.6 # no quota
X8=intel-xe-8192

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

# provision: VFs 1 and 2 get 8 GiB, then 4 VFs are enabled (3 and 4 get
# none: a quota turns the driver's fair share off), and the config names
# the 8 GiB type for the GPU.
provision() {
        put $((8 * GIB)) "$(admin vf1/profile/vram_quota)"
        put $((8 * GIB)) "$(admin vf2/profile/vram_quota)"
        put 4 "$SIM_SYS/bus/pci/devices/$XPF/sriov_numvfs"
        config_types nvidia-35 "$P84" "$X8" "$XPF"
}

@test "prepare records an xe VF for the guest, of its quota's type, and writes nothing to sysfs" {
        provision
        sim_counters_reset
        run aprepare g1 "pci=$XVF1,type=$X8"
        [ "$status" -eq 0 ]
        [ "$(sim_counter_total writes)" -eq 0 ]
        [ "$(record_get "$XVF1" parent)" = "$XPF" ]
        [ "$(record_get "$XVF1" type)" = "$X8" ]
        [ "$(record_get "$XVF1" origin)" = borrowed ]
        [ "$(record_get "$XVF1" guest)" = g1 ]
}

@test "two guests never get one xe VF: the second is refused in one line naming the holder" {
        provision
        run -0 aprepare g1 "pci=$XVF1,type=$X8"
        arefused g2 "pci=$XVF1"
        [[ "$output" == *"held by guest 'g1'"* ]]
        [ "$(record_get "$XVF1" guest)" = g1 ]
}

@test "prepare refuses an xe VF of another quota, and one without a quota, changing nothing" {
        provision
        arefused g1 "pci=$XVF1,type=intel-xe-4096"
        [[ "$output" == *"$XVF1 is $X8 (its VRAM quota)"* ]]
        arefused g1 "pci=$XVF3,type=$X8"
        [[ "$output" == *"$XVF3 has no type: its VRAM quota is 0"* ]]
        [ "$(cat "$(admin vf3/profile/vram_quota)")" = 0 ]
}

@test "release forgets the guest's xe VF, leaves its quota and another guest's VF alone" {
        provision
        run -0 aprepare g1 "pci=$XVF1,type=$X8"
        run -0 aprepare g2 "pci=$XVF2,type=$X8"
        sim_counters_reset
        run -0 release g1
        [ "$(sim_counter_total writes)" -eq 0 ]
        record_absent "$XVF1"
        [ "$(record_get "$XVF2" guest)" = g2 ]
        [ "$(cat "$(admin vf1/profile/vram_quota)")" = $((8 * GIB)) ]
}

@test "pick names an xe VF of the type that no guest holds, and says so when none is left" {
        provision
        run -0 "$MH_CLI" pick "$X8"
        [ "$output" = "$XVF1" ]
        run -0 aprepare g1 "pci=$XVF1,type=$X8"
        run -0 "$MH_CLI" pick "$X8"
        [ "$output" = "$XVF2" ]
        run -0 aprepare g2 "pci=$XVF2,type=$X8"
        run "$MH_CLI" pick "$X8"
        [ "$status" -ne 0 ]
        [[ "$output" == *"no free VF of type $X8"* ]]
}

@test "migrate of a guest with an xe VF is refused in one line naming xe-vfio-pci, and nothing is claimed" {
        provision
        axml web1 "pci=$XVF1,type=$X8" > "$BATS_TEST_TMPDIR/web1.xml"
        sim_counters_reset
        run hook web1 migrate begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"Intel xe VF $XVF1, which cannot migrate"*"xe-vfio-pci"* ]]
        [ "$(sim_counter_total writes)" -eq 0 ]
        record_absent "$XVF1"
}

@test "list, types and inventory show the xe VFs of each quota beside the mdevs" {
        provision
        run -0 aprepare g1 "pci=$XVF1,type=$X8" "$U1,type=nvidia-35"
        run -0 "$MH_CLI" list
        [ "$(printf '%s\n' "$output" | grep -c "^$XVF1 .*$XPF.*$X8.*g1")" = 1 ]
        [ "$(printf '%s\n' "$output" | grep -c "$U1.*nvidia-35.*g1")" = 1 ]
        [ "$(printf '%s\n' "$output" | grep -c "$XVF3")" = 0 ]
        run -0 "$MH_CLI" types --parent "$XPF"
        [[ "$output" == *"$X8"*"8192 MiB VRAM"* ]]
        run -0 "$MH_CLI" inventory --json
        [ "$(jq -r --arg p "$XPF" '.parents[] | select(.parent == $p) | .total' <<<"$output")" = 2 ]
}

@test "check-config says in one line when an xe GPU's VFs have no quota of the type named for it" {
        provision
        config_types "intel-xe-4096" "$XPF"
        run "$MH_CLI" check-config
        [ "$status" -ne 0 ]
        [[ "$output" == *"$XPF"*"whose VFs are $X8, not intel-xe-4096"* ]]
}

@test "inventory --placement gives the xe GPU a trait of its VFs' quota, apart from AMD's and NVIDIA's" {
        provision
        run -0 "$MH_CLI" inventory --placement --hostname h
        [ "$(jq -r '.resource_providers[] | select(.name == "h_pci_0000_03_00_0") | .traits[]' <<<"$output")" = CUSTOM_MDEV_INTEL_XE_8192 ]
        [ "$(jq -r '.resource_providers[] | select(.name == "h_pci_0000_03_00_0") | .inventories.VGPU.total' <<<"$output")" = 2 ]
}

@test "udev: an xe VF bound to vfio-pci for its guest keeps the guest's record" {
        provision
        run -0 aprepare g1 "pci=$XVF1,type=$X8"
        run env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION=bind SUBSYSTEM=pci \
                DEVPATH="/devices/pci0000:00/$XVF1" SEQNUM=1 "$MH_UDEV" "$XVF1"
        [ "$status" -eq 0 ]
        [ "$(record_get "$XVF1" state)" = assigned ]
        [ "$(record_get "$XVF1" guest)" = g1 ]
}

@test "a running xe VF's quota cannot change under its guest, and list still shows it the guest's" {
        provision
        run -0 aprepare g1 "pci=$XVF1,type=$X8"
        sim_ctl vf-open "$XVF1"
        run put $((4 * GIB)) "$(admin vf1/profile/vram_quota)"
        [[ "$output" == *"Device or resource busy"* ]]
        run -0 "$MH_CLI" list
        [ "$(printf '%s\n' "$output" | grep -c "^$XVF1 .*$X8.*g1")" = 1 ]
}

@test "pick --xml gives an xe VF as a managed hostdev, for libvirt to bind it to vfio-pci" {
        provision
        run -0 "$MH_CLI" pick --xml "$X8"
        [[ "$output" == *"<hostdev mode=\"subsystem\" type=\"pci\" managed=\"yes\">"* ]]
        [[ "$output" == *"<mh:vgpu pci=\"$XVF1\" type=\"$X8\"/>"* ]]
}
