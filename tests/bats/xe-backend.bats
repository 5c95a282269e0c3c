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

@test "prepare writes the scheduling profile the guest's entry asks of its xe VF, read back" {
        provision
        run -0 aprepare g1 "pci=$XVF1,type=$X8,exec_quantum_ms=20,preempt_timeout_us=500000"
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 20 ]
        [ "$(cat "$(admin vf1/profile/preempt_timeout_us)")" = 500000 ]
        [ "$(cat "$(admin vf2/profile/exec_quantum_ms)")" = 0 ]
        [ "$(record_get "$XVF1" guest)" = g1 ]
}

@test "prepare with only one knob asked writes that one and leaves the other as it is" {
        provision
        put 7 "$(admin vf1/profile/exec_quantum_ms)"
        run -0 aprepare g1 "pci=$XVF1,type=$X8,preempt_timeout_us=1000"
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 7 ]
        [ "$(cat "$(admin vf1/profile/preempt_timeout_us)")" = 1000 ]
}

# sched_refused NAME SPEC...: prepare is refused in one line naming the
# scheduling profile, and nothing is claimed.
sched_refused() {
        run aprepare "$@"
        echo "$output"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: $1: guest '$1' cannot have the scheduling profile it asks of Intel xe VF $XVF1: "* ]]
        [ -z "$(records)" ]
}

@test "a scheduling profile the firmware refuses (EIO) refuses the start in one line, nothing claimed, the profile as it was" {
        provision
        put 7 "$(admin vf1/profile/exec_quantum_ms)"
        sim_ctl xe-sched-refuse "$XPF" EIO
        sched_refused g1 "pci=$XVF1,type=$X8,exec_quantum_ms=20"
        [[ "$output" == *"exec_quantum_ms"*"(EIO)"* ]]
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 7 ]
}

@test "a knob the driver says is not applicable (EPERM) refuses the start, and the knob written before it is put back" {
        provision
        put 7 "$(admin vf1/profile/exec_quantum_ms)"
        sim_ctl xe-sched-refuse "$XPF" EPERM knob=preempt_timeout_us
        sched_refused g1 "pci=$XVF1,type=$X8,exec_quantum_ms=20,preempt_timeout_us=1000"
        [[ "$output" == *"preempt_timeout_us"*"(EPERM)"* ]]
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 7 ]
        [ "$(cat "$(admin vf1/profile/preempt_timeout_us)")" = 0 ]
        # the same guest starts once the driver takes it
        sim_ctl xe-sched-refuse "$XPF" 0
        run -0 aprepare g1 "pci=$XVF1,type=$X8,exec_quantum_ms=20,preempt_timeout_us=1000"
        [ "$(cat "$(admin vf1/profile/preempt_timeout_us)")" = 1000 ]
}

@test "a scheduling knob that is no u32 (what the driver refuses with EINVAL) is refused in one line before anything is written" {
        provision
        arefused g1 "pci=$XVF1,type=$X8,exec_quantum_ms=4294967296"
        [[ "$output" == *"exec_quantum_ms '4294967296' is not a number from 0 to 4294967295"* ]]
        arefused g1 "pci=$XVF1,type=$X8,preempt_timeout_us=-1"
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

# ------------------------------------------------------------- migrate / restore
# Two hosts of tests/sim/topologies/intel-xe-migrate.conf: A (source) and B
# (destination), each with a Battlemage GPU (MGPU, whose VFs xe-vfio-pci
# drives) and a Flex 170 (FLEX, whose VFs it does not), both with 2 VFs of
# 8 GiB, and xe-vfio-pci installed for the running kernel.

MGPU=0000:03:00.0
FLEX=0000:06:00.0
FVF1=0000:06:00.4

two_xe_hosts() {
        A="$BATS_TEST_TMPDIR/a"
        B="$BATS_TEST_TMPDIR/b"
        T="$BATS_TEST_TMPDIR"
        for h in "$A" "$B"; do
                sim_mount intel-xe-migrate "$h"
                config_types "$X8" "$MGPU, $FLEX"
                xe_vfio_pci_installed
        done
}

# on HOST CMD...: CMD with HOST as the root (sim_use).
on() {
        sim_use "$1"
        shift
        "$@"
}

# xe_guest NAME VF HOST: NAME's XML on HOST with VF (kept in $T/NAME.xml,
# which migrate_to_b reads), prepared there.
xe_guest() {
        sim_use "$3"
        axml "$1" "pci=$2,type=$X8" > "$T/$1.xml"
        hook "$1" prepare begin - < "$T/$1.xml"
}

# xe_migrate_refused NAME: migrate of NAME to B is refused in one line, with
# no sysfs write and no record of NAME left on B.
xe_migrate_refused() {
        sim_use "$B"
        sim_counters_reset
        migrate_to_b "$1"
        echo "$stderr"
        [ "$status" -eq 1 ]
        [ -z "$output" ]
        [ "$(printf '%s\n' "$stderr" | grep -c .)" -eq 1 ]
        [[ "$stderr" == "mdev-hooks: $1: "* ]]
        [ "$(sim_counter_total writes)" -eq 0 ]
        for r in $(records); do
                [ "$(record_get "$r" guest)" != "$1" ]
        done
}

@test "migrate: the incoming xe VF is free here on a GPU xe-vfio-pci drives: claimed as incoming, XML unchanged" {
        two_xe_hosts
        run -0 xe_guest g1 "$XVF1" "$A"
        migrate_to_b g1
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(record_get "$XVF1" guest)" = g1 ]
        [ "$(record_get "$XVF1" state)" = incoming ]
        [ "$(record_get "$XVF1" type)" = "$X8" ]
        # the XML libvirt goes on with starts the guest here
        run -0 hook g1 prepare begin - < "$T/g1.b.xml"
        [ "$(record_get "$XVF1" state)" = assigned ]
}

@test "migrate: the incoming VF taken here, the guest gets a free VF of its type on a GPU xe-vfio-pci drives, its address rewritten" {
        two_xe_hosts
        run -0 xe_guest g1 "$XVF1" "$A"
        run -0 xe_guest other "$XVF1" "$B"
        migrate_to_b g1
        [ "$status" -eq 0 ]
        # the Flex's VFs are free and of the type too, but cannot migrate
        [ "$(record_get "$XVF2" guest)" = g1 ]
        [ "$(record_get "$XVF2" state)" = incoming ]
        record_absent "$FVF1"
        [ "$(record_get "$XVF1" guest)" = other ]
        grep -q 'domain="0x0000" bus="0x03" slot="0x00" function="0x5"' "$T/g1.b.xml" ||
                grep -q "domain='0x0000' bus='0x03' slot='0x00' function='0x5'" "$T/g1.b.xml"
        grep -q "pci=\"$XVF2\" type=\"$X8\"" "$T/g1.b.xml"
        ! grep -q "$XVF1" "$T/g1.b.xml"
        run -0 hook g1 prepare begin - < "$T/g1.b.xml"
        [ "$(record_get "$XVF2" state)" = assigned ]
        [ "$(record_get "$XVF2" origin)" = borrowed ]
}

@test "migrate: the destination's release after a failed migration frees the claim" {
        two_xe_hosts
        run -0 xe_guest g1 "$XVF1" "$A"
        migrate_to_b g1
        [ "$status" -eq 0 ]
        [ "$(record_get "$XVF1" state)" = incoming ]
        sim_counters_reset
        run -0 hook g1 release end failed < "$T/g1.b.xml"
        record_absent "$XVF1"
        [ "$(sim_counter_total writes)" -eq 0 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/$MGPU/sriov_admin/vf1/profile/vram_quota")" = $((8 * GIB)) ]
        run -0 "$MH_CLI" pick "$X8"
        [ "$output" = "$XVF1" ]
}

@test "restore on the same host: the guest's xe VF is claimed again as incoming, XML unchanged" {
        two_xe_hosts
        run -0 xe_guest g1 "$XVF2" "$B"
        run -0 hook g1 release end saved < "$T/g1.xml"
        record_absent "$XVF2"
        migrate_to_b g1 restore
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(record_get "$XVF2" guest)" = g1 ]
        [ "$(record_get "$XVF2" state)" = incoming ]
        run -0 hook g1 prepare begin - < "$T/g1.b.xml"
        [ "$(record_get "$XVF2" state)" = assigned ]
}

@test "restore when another guest took the VF meanwhile: another VF of the type, rewritten" {
        two_xe_hosts
        run -0 xe_guest g1 "$XVF1" "$B"
        run -0 hook g1 release end saved < "$T/g1.xml"
        run -0 xe_guest other "$XVF1" "$B"
        migrate_to_b g1 restore
        [ "$status" -eq 0 ]
        [ "$(record_get "$XVF2" guest)" = g1 ]
        grep -q "pci=\"$XVF2\"" "$T/g1.b.xml"
}

@test "migrate is refused in one line when the only free VFs of the type are on a GPU xe-vfio-pci does not drive" {
        two_xe_hosts
        run -0 xe_guest g1 "$XVF1" "$A"
        run -0 xe_guest b1 "$XVF1" "$B"
        run -0 xe_guest b2 "$XVF2" "$B"
        xe_migrate_refused g1
        [[ "$stderr" == *"guest 'g1' cannot have its Intel xe VF $XVF1 ($X8) here"* ]]
        [[ "$stderr" == *"GPU $FLEX (device 0x56c0) is not one that xe-vfio-pci drives"* ]]
        record_absent "$FVF1"
}

@test "migrate is refused in one line when xe-vfio-pci is not installed here, naming the kernel" {
        two_xe_hosts
        run -0 xe_guest g1 "$XVF1" "$A"
        sim_use "$B"
        xe_vfio_pci_absent 6.18.0-sim
        xe_migrate_refused g1
        [[ "$stderr" == *"xe-vfio-pci is not installed for kernel 6.18.0-sim"* ]]
        record_absent "$XVF1"
}

@test "migrate is refused in one line when no VF of the type is free here, naming the type" {
        two_xe_hosts
        run -0 xe_guest g1 "$XVF1" "$A"
        config_types "$X8" "$MGPU" # the Flex is not the type's here
        for g in b1 b2; do
                v=$("$MH_CLI" pick "$X8")
                run -0 xe_guest "$g" "$v" "$B"
        done
        xe_migrate_refused g1
        [[ "$stderr" == *"no free VF of type $X8"* ]]
}

@test "two guests migrating in at once never get the same xe VF" {
        two_xe_hosts # g1 and g2 come from two hosts, on the same address
        run -0 xe_guest g1 "$XVF1" "$A"
        sim_use "$B"
        axml g2 "pci=$XVF1,type=$X8" > "$T/g2.xml"
        lock="$MDEV_HOOKS_ROOT/run/mdev-hooks/lock"
        lock_hold "$lock" "test holds the lock"
        hook g1 migrate begin - < "$T/g1.xml" > "$T/g1.b.xml" 2> "$T/g1.err" &
        p1=$!
        hook g2 migrate begin - < "$T/g2.xml" > "$T/g2.b.xml" 2> "$T/g2.err" &
        p2=$!
        lock_waiter "$lock"
        lock_let_go
        wait "$p1"
        wait "$p2"
        [ "$(record_get "$XVF1" state)" = incoming ]
        [ "$(record_get "$XVF2" state)" = incoming ]
        [ "$(record_get "$XVF1" guest)" != "$(record_get "$XVF2" guest)" ]
        # each guest's XML names the VF it got
        for g in g1 g2; do
                [ -s "$T/$g.b.xml" ] || cp "$T/$g.xml" "$T/$g.b.xml"
                vf=$(grep -o 'pci="[^"]*"' "$T/$g.b.xml" | cut -d'"' -f2)
                [ "$(record_get "$vf" guest)" = "$g" ]
        done
}

@test "a guest with two xe VFs never gets one VF twice: refused when only one of the type can migrate here" {
        two_xe_hosts
        sim_use "$A"
        axml g1 "pci=$XVF1,type=$X8" "pci=$XVF2,type=$X8" > "$T/g1.xml"
        run -0 hook g1 prepare begin - < "$T/g1.xml"
        run -0 xe_guest other "$XVF1" "$B"
        # XVF1 is other's: the first VF gets XVF2, which the second then cannot
        xe_migrate_refused g1
        [[ "$stderr" == *"cannot have its Intel xe VF $XVF2 ($X8) here"* ]]
        [ "$(record_get "$XVF1" guest)" = other ]
        record_absent "$XVF2"
        # with XVF1 free again, each gets its own
        run -0 hook other release end destroyed < "$T/other.xml"
        migrate_to_b g1
        [ "$status" -eq 0 ]
        [ "$(record_get "$XVF1" guest)" = g1 ]
        [ "$(record_get "$XVF2" guest)" = g1 ]
}

@test "types says of each xe GPU whether its VFs can migrate here" {
        two_xe_hosts
        sim_use "$B"
        run -0 "$MH_CLI" types --parent "$MGPU"
        [[ "$output" == *"$X8"*"its VFs can migrate (xe-vfio-pci)"* ]]
        run -0 "$MH_CLI" types --parent "$FLEX"
        [[ "$output" == *"$X8"*"its VFs cannot migrate"* ]]
        xe_vfio_pci_absent
        run -0 "$MH_CLI" types --parent "$MGPU"
        [[ "$output" == *"its VFs cannot migrate"* ]]
}

# --- one GPU, VFs of two quotas, its scheduling declared ([gpu_<PF>])

X4=intel-xe-4096

# provision_mixed: the config names both types for XPF and declares its
# four VFs, two of 8 GiB and two of 4 GiB, each with a scheduling profile;
# gpu plan brings it there.
provision_mixed() {
        config_types nvidia-35 "$P84" "$X8" "$XPF" "$X4" "$XPF" -- \
                "[gpu_$XPF]" "vfs = 4" "vram_quota = 8G, 8G, 4G, 4G" "exec_quantum_ms = 20" "preempt_timeout_us = 500000"
        "$MH_CLI" gpu plan "$XPF" > /dev/null
}

# vf_of_quota BYTES: the VFs (addresses) of XPF with that quota.
vf_of_quota() {
        local k vf
        for k in 1 2 3 4; do
                [ "$(cat "$(admin "vf$k/profile/vram_quota")")" = "$1" ] || continue
                vf=$(basename "$(readlink "$(admin "vf$k/device")")")
                printf '%s\n' "$vf"
        done
}

@test "guests of both types start on one GPU with VFs of two quotas, and inventory counts each type" {
        provision_mixed
        run -0 "$MH_CLI" check-config
        run -0 "$MH_CLI" types --parent "$XPF"
        [[ "$output" == *"$X8"*"8192 MiB VRAM"* ]]
        [[ "$output" == *"$X4"*"4096 MiB VRAM"* ]]
        run -0 "$MH_CLI" pick "$X4"
        v4=$output
        grep -qx "$v4" <<<"$(vf_of_quota $((4 * GIB)))"
        run -0 "$MH_CLI" pick "$X8"
        v8=$output
        grep -qx "$v8" <<<"$(vf_of_quota $((8 * GIB)))"
        run -0 aprepare g8 "pci=$v8,type=$X8"
        run -0 aprepare g4 "pci=$v4,type=$X4"
        [ "$(record_get "$v8" type)" = "$X8" ]
        [ "$(record_get "$v4" type)" = "$X4" ]
        run -0 "$MH_CLI" inventory --json
        echo "$output"
        for t in "$X8" "$X4"; do
                [ "$(jq -r --arg p "$XPF" --arg t "$t" '.parents[] | select(.parent == $p and .type == $t) | .total' <<<"$output")" = 2 ]
        done
        # a guest asking one type for a VF of the other is refused in one line
        other=$(vf_of_quota $((4 * GIB)) | grep -vx "$v4")
        arefused g3 "pci=$other,type=$X8"
        [[ "$output" == *"VF $other is ${X4}"* ]]
}

@test "a guest's entry sets its VF's scheduling over the GPU's declared one, and gpu plan leaves a VF a guest holds alone" {
        provision_mixed
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 20 ]
        run -0 aprepare g1 "pci=$XVF1,type=$X8,exec_quantum_ms=5"
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 5 ]
        [ "$(cat "$(admin vf1/profile/preempt_timeout_us)")" = 500000 ]
        # libvirt binds the guest's VF to vfio-pci (managed='yes')
        sim_ctl vf-driver "$XVF1" vfio-pci
        sim_counters_reset
        run -0 "$MH_CLI" gpu plan "$XPF"
        [[ "$output" == *"already in its declared state; the scheduling of 1 VF a guest holds is left as its entry set it" ]]
        [ "$(sim_counter_total writes)" = 0 ]
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 5 ]
        # the guest's release gives its VF the GPU's declared scheduling back
        run -0 release g1
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 20 ]
        [ "$(cat "$(admin vf1/profile/preempt_timeout_us)")" = 500000 ]
        sim_ctl vf-driver "$XVF1" xe
        run -0 "$MH_CLI" gpu plan "$XPF"
        [[ "$output" == *"already in its declared state" ]]
        # a VF whose scheduling someone else changed: the plan writes it back
        printf '7\n' > "$(admin vf1/profile/exec_quantum_ms)"
        run -0 "$MH_CLI" gpu plan "$XPF"
        [[ "$output" == *"brought to its declared state (1 write)" ]]
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 20 ]
}

@test "release of a guest on a GPU without declared scheduling leaves its VF's as the guest's entry set it" {
        provision
        run -0 aprepare g1 "pci=$XVF1,type=$X8,exec_quantum_ms=5"
        run -0 release g1
        [ "$(cat "$(admin vf1/profile/exec_quantum_ms)")" = 5 ]
}
