# Group 3, the real libvirtd: virsh start and destroy of type='qemu' guests
# (they sit in their firmware) with mtty mdev hostdevs and this project's
# metadata run the installed hook (/etc/libvirt/hooks/qemu.d/mdev-hooks);
# QEMU opens the mdev through VFIO.

load helpers

U1=3c3c0000-0000-4000-8000-000000000001
U2=3c3c0000-0000-4000-8000-000000000002
U3=3c3c0000-0000-4000-8000-000000000003
G1=5a5a0000-0000-4000-8000-0000000000c1
G2=5a5a0000-0000-4000-8000-0000000000c2
G3=5a5a0000-0000-4000-8000-0000000000c3
G4=5a5a0000-0000-4000-8000-0000000000c4

setup_file() {
        vm_mtty_load
        vm_remove_all_mdevs
        vm_record_clear
        modprobe vfio_iommu_type1
        vm_config mtty-1
        vm_libvirtd_wait 300
}

teardown_file() {
        local d
        for d in g0 g1 g2 g3 g4; do
                virsh -q destroy "$d" > /dev/null 2>&1 || true
                virsh -q undefine "$d" > /dev/null 2>&1 || true
        done
}

# A test that fails half-way leaves no guest of its own running.
teardown() {
        local d
        for d in g2 g3 g4; do
                virsh -q destroy "$d" > /dev/null 2>&1 || true
        done
}

virsh() {
        command virsh -c qemu:///system "$@"
}

# define NAME GUEST_UUID [MDEV_UUID:TYPE...]
define() {
        vm_domxml "$@" > "$BATS_TEST_TMPDIR/$1.xml"
        virsh -q define "$BATS_TEST_TMPDIR/$1.xml"
}

qemu_pid() {
        cat "/run/libvirt/qemu/$1.pid"
}

# The guest's QEMU was given the mdev and holds its VFIO group open.
qemu_has_mdev() {
        local pid group fd
        pid=$(qemu_pid "$1")
        tr '\0' '\n' < "/proc/$pid/cmdline" | grep -q "/sys/bus/mdev/devices/$2" || {
                echo "QEMU $pid was not given $2" >&2
                return 1
        }
        group=$(basename "$(readlink "$MDEV_DEVS/$2/iommu_group")")
        for fd in "/proc/$pid/fd/"*; do
                [ "$(readlink "$fd")" != "/dev/vfio/$group" ] || return 0
        done
        echo "QEMU $pid does not hold /dev/vfio/$group open" >&2
        return 1
}

list_row() {
        mdev-hooks list --json | jq -r --arg u "$1" '.mdevs[] | select(.uuid == $u) | "\(.guest) \(.state)"'
}

@test "libvirtd: virsh start runs the hook, which creates the mdev, QEMU runs with it, list names the guest" {
        define g1 "$G1" "$U1:mtty-1"
        run virsh start g1
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(virsh domstate g1)" = running ]
        vm_mdev_exists "$U1"
        [ "$(vm_mdev_type "$U1")" = mtty-1 ]
        qemu_has_mdev g1 "$U1"
        [ "$(list_row "$U1")" = "g1 assigned" ]
}

@test "libvirtd: virsh destroy runs release and the mdev is gone" {
        [ "$(virsh domstate g1)" = running ]
        run virsh destroy g1
        echo "$output"
        [ "$status" -eq 0 ]
        vm_mdev_gone "$U1"
        [ -z "$(list_row "$U1")" ]
        [ "$(vm_avail mtty-1)" -eq 24 ]
}

@test "libvirtd: two guests started at once both get their mdevs" {
        define g2 "$G2" "$U2:mtty-1"
        define g3 "$G3" "$U3:mtty-1"
        virsh start g2 > "$BATS_TEST_TMPDIR/g2.out" 2>&1 &
        p2=$!
        virsh start g3 > "$BATS_TEST_TMPDIR/g3.out" 2>&1 &
        p3=$!
        r2=0 r3=0
        wait "$p2" || r2=$?
        wait "$p3" || r3=$?
        cat "$BATS_TEST_TMPDIR/g2.out" "$BATS_TEST_TMPDIR/g3.out"
        [ "$r2" -eq 0 ]
        [ "$r3" -eq 0 ]
        [ "$(virsh domstate g2)" = running ]
        [ "$(virsh domstate g3)" = running ]
        qemu_has_mdev g2 "$U2"
        qemu_has_mdev g3 "$U3"
        [ "$(list_row "$U2")" = "g2 assigned" ]
        [ "$(list_row "$U3")" = "g3 assigned" ]
        virsh destroy g2
        virsh destroy g3
        vm_mdev_gone "$U2"
        vm_mdev_gone "$U3"
}

@test "libvirtd: a guest asking for more than the pool holds fails with the hook's reason in virsh start's error" {
        # 25 mtty-1 mdevs; mtty's pool holds 24.
        specs=()
        for i in $(seq 25); do
                specs+=("$(printf '3c3c0000-0000-4000-8000-0000000004%02d' "$i"):mtty-1")
        done
        define g4 "$G4" "${specs[@]}"
        before=$(ls "$MDEV_DEVS" | wc -l)
        avail=$(vm_avail mtty-1)
        run virsh start g4
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"mdev-hooks: g4: no capacity for mtty-1"* ]]
        [ "$(virsh domstate g4)" = "shut off" ]
        for m in "${specs[@]}"; do
                vm_mdev_gone "${m%%:*}"
        done
        [ "$(ls "$MDEV_DEVS" | wc -l)" -eq "$before" ]
        [ "$(vm_avail mtty-1)" -eq "$avail" ]
}

@test "libvirtd: killed and restarted while a guest runs, reconnect keeps the guest and its claim" {
        run virsh start g1
        echo "$output"
        [ "$status" -eq 0 ]
        qpid=$(qemu_pid g1)
        lpid=$(pidof libvirtd)
        [ -n "$lpid" ]
        kill -9 $lpid
        while kill -0 $lpid 2>/dev/null; do sleep 0.2; done
        vm_libvirtd_start
        vm_libvirtd_wait 300
        [ "$(virsh domstate g1)" = running ]
        [ "$(qemu_pid g1)" = "$qpid" ]
        kill -0 "$qpid"
        vm_mdev_exists "$U1"
        [ "$(list_row "$U1")" = "g1 assigned" ]
        run virsh destroy g1
        [ "$status" -eq 0 ]
        vm_mdev_gone "$U1"
}

# ledger_state: the record's directory, every name in it with its inode,
# and what each record holds.
ledger_state() {
        local f
        ls -A -i "$LEDGER" 2>/dev/null || true
        for f in "$LEDGER"/*; do
                [ ! -f "$f" ] || cat "$f"
        done
}

@test "libvirtd: a guest without mdevs starts and stops with the hook installed and nothing is recorded" {
        define g0 5a5a0000-0000-4000-8000-0000000000c0
        before="$(ledger_state)"
        run virsh start g0
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(virsh domstate g0)" = running ]
        run virsh destroy g0
        [ "$status" -eq 0 ]
        [ -z "$(ls "$LEDGER" 2>/dev/null)" ]
        [ "$(ledger_state)" = "$before" ]
        virsh -q undefine g0
}

@test "libvirtd: reconcile over libvirt's API agrees with a running guest, and --apply records a claim whose record was lost" {
        run virsh start g1
        echo "$output"
        [ "$status" -eq 0 ]
        run mdev-hooks reconcile --connect qemu:///system
        echo "$output"
        [ "$status" -eq 0 ]
        rm "$LEDGER/$U1"
        run mdev-hooks reconcile --connect qemu:///system
        echo "$output"
        [ "$status" -eq 1 ]
        [[ "$output" == *"$U1"* ]]
        [ ! -e "$LEDGER/$U1" ]
        run mdev-hooks reconcile --connect qemu:///system --apply
        echo "$output"
        [ "$(vm_record_get "$U1" guest)" = g1 ]
        [ "$(vm_record_get "$U1" state)" = assigned ]
        run mdev-hooks reconcile --connect qemu:///system
        echo "$output"
        [ "$status" -eq 0 ]
        # Nothing shows that mdev-hooks made it: borrowed, so release keeps it.
        [ "$(vm_record_get "$U1" origin)" = borrowed ]
        virsh destroy g1
        vm_mdev_exists "$U1"
        [ ! -e "$LEDGER/$U1" ]
        echo 1 > "$MDEV_DEVS/$U1/remove"
}
