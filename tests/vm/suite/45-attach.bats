# `mdev-hooks attach` and `detach` with the real libvirtd, QEMU and mtty:
# a plain defined guest is given an mdev and started (the hook creates it),
# a second mdev is hot-plugged into it and unplugged again, and nothing
# leaks; a hot-plug QEMU refuses (a guest without ACPI) undoes the claim. The guest sits in its firmware, which does not answer an ACPI
# unplug request: the test answers it as a guest's ACPI handler does, by
# writing the slot to the PIIX4's eject register (0xae08) through QEMU's
# monitor, once QEMU has raised the request (the slot's bit in 0xae04).

load helpers

G5=5a5a0000-0000-4000-8000-0000000000c5
G6=5a5a0000-0000-4000-8000-0000000000c6

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
        for d in g5 g6; do
                virsh -q destroy "$d" > /dev/null 2>&1 || true
                virsh -q undefine "$d" > /dev/null 2>&1 || true
        done
}

virsh() {
        command virsh -c qemu:///system "$@"
}

# added OUTPUT: the UUIDs of "added mdev UUID ..." lines.
added() {
        sed -n 's/^added mdev \([0-9a-f-]*\) .*/\1/p' <<< "$1"
}

# live_hostdev UUID: the <hostdev> of the mdev in g5's running XML.
live_hostdev() {
        virsh dumpxml g5 | awk -v u="$1" '/<hostdev/ { b = ""; on = 1 } on { b = b $0 "\n" } /<\/hostdev>/ { on = 0; if (index(b, u)) printf "%s", b }'
}

# io_read PORT: a 32-bit read of an I/O port of g5's QEMU, as a number.
io_read() {
        local v
        v=$(virsh qemu-monitor-command g5 --hmp "i /w $1" | sed -n 's/.*= *\(0x[0-9a-fA-F]*\).*/\1/p')
        echo $((v))
}

@test "attach --live on a guest whose bus cannot hot-plug: libvirt refuses, the claim is undone, nothing is left" {
        # without ACPI the PIIX4 has no PCI hotplug: QEMU refuses device_add
        vm_domxml g6 "$G6" > "$BATS_TEST_TMPDIR/g6.xml"
        virsh -q define "$BATS_TEST_TMPDIR/g6.xml"
        run virsh start g6
        [ "$status" -eq 0 ]
        avail=$(vm_avail mtty-1)
        run mdev-hooks attach g6 mtty-1 --live
        echo "$output"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        vm_udev_settle
        [[ "$output" == "mdev-hooks: g6: libvirt refused to hot-plug mdev "*"(mtty-1): "*"; its claim is undone" ]]
        [ -z "$(ls "$MDEV_DEVS")" ]
        [ -z "$(ls "$LEDGER" 2>/dev/null)" ]
        [ "$(vm_avail mtty-1)" -eq "$avail" ]
        [[ "$(virsh dumpxml g6)" != *"mh:mdev "* ]]
        run virsh destroy g6
        [ "$status" -eq 0 ]
}

@test "attach: a plain defined guest gets an mdev in its definition, and virsh start creates it" {
        # ACPI: the PIIX4's PCI hotplug, which --live needs
        vm_domxml g5 "$G5" | sed 's#</os>#</os><features><acpi/></features>#' > "$BATS_TEST_TMPDIR/g5.xml"
        virsh -q define "$BATS_TEST_TMPDIR/g5.xml"
        run mdev-hooks attach g5 mtty-1
        echo "$output"
        [ "$status" -eq 0 ]
        u1=$(added "$output")
        [ -n "$u1" ]
        echo "$u1" > "$BATS_FILE_TMPDIR/u1"
        def=$(virsh dumpxml --inactive g5)
        [[ "$def" == *"<address uuid='$u1'/>"* ]]
        [[ "$def" == *"<mh:mdev uuid=\"$u1\" type=\"mtty-1\"/>"* ]]
        vm_mdev_gone "$u1"
        run virsh start g5
        echo "$output"
        [ "$status" -eq 0 ]
        vm_mdev_exists "$u1"
        [ "$(vm_mdev_type "$u1")" = mtty-1 ]
        [ "$(vm_record_get "$u1" guest)" = g5 ]
        [ "$(vm_record_get "$u1" state)" = assigned ]
}

@test "attach --live: a second mdev is created, claimed and hot-plugged into the running guest" {
        avail=$(vm_avail mtty-1)
        run mdev-hooks attach g5 mtty-1 --live -c qemu:///system
        echo "$output"
        [ "$status" -eq 0 ]
        u2=$(added "$output")
        [ -n "$u2" ]
        echo "$u2" > "$BATS_FILE_TMPDIR/u2"
        [[ "$output" == *"to 'g5': the running guest"* ]]
        [[ "$(live_hostdev "$u2")" == *"<alias name="* ]]
        [[ "$(virsh dumpxml g5)" == *"<mh:mdev uuid=\"$u2\" type=\"mtty-1\"/>"* ]]
        vm_mdev_exists "$u2"
        [ "$(vm_avail mtty-1)" -eq $((avail - 1)) ]
        [ "$(vm_record_get "$u2" guest)" = g5 ]
        [ "$(vm_record_get "$u2" state)" = assigned ]
        [ "$(vm_record_get "$u2" origin)" = created ]
        # --live alone: the definition is as it was
        [[ "$(virsh dumpxml --inactive g5)" != *"$u2"* ]]
}

@test "detach --live: once the guest gives the mdev back it is removed as release removes it, gone from the live XML and the record" {
        u1=$(cat "$BATS_FILE_TMPDIR/u1")
        u2=$(cat "$BATS_FILE_TMPDIR/u2")
        avail=$(vm_avail mtty-1)
        slot=$(live_hostdev "$u2" | sed -n "s/.*<address type='pci' domain='0x0000' bus='0x00' slot='\(0x[0-9a-f]*\)'.*/\1/p")
        [ -n "$slot" ]
        mdev-hooks detach g5 "$u2" --live --timeout 300 > "$BATS_TEST_TMPDIR/detach.out" 2>&1 &
        pid=$!
        # QEMU raises the unplug request when libvirt asks: wait for it (bounded)
        for _ in $(seq 600); do
                [ $(( $(io_read 0xae04) & (1 << slot) )) -eq 0 ] || break
                sleep 0.5
        done
        [ $(( $(io_read 0xae04) & (1 << slot) )) -ne 0 ]
        virsh qemu-monitor-command g5 --hmp "o /w 0xae08 $((1 << slot))"
        rc=0
        wait "$pid" || rc=$?
        cat "$BATS_TEST_TMPDIR/detach.out"
        [ "$rc" -eq 0 ]
        vm_udev_settle
        grep -q "^removed mdev $u2 (mtty-1) from 'g5': the running guest$" "$BATS_TEST_TMPDIR/detach.out"
        [ -z "$(live_hostdev "$u2")" ]
        [[ "$(virsh dumpxml g5)" != *"$u2"* ]]
        vm_mdev_gone "$u2"
        [ ! -e "$LEDGER/$u2" ]
        [ "$(vm_avail mtty-1)" -eq $((avail + 1)) ]
        # the first one untouched
        vm_mdev_exists "$u1"
        [ "$(vm_record_get "$u1" state)" = assigned ]
}

@test "detach --live of an mdev the guest does not give back times out saying what to do, and the record stays true" {
        run mdev-hooks attach g5 mtty-1 --live
        echo "$output"
        [ "$status" -eq 0 ]
        u3=$(added "$output")
        echo "$u3" > "$BATS_FILE_TMPDIR/u3"
        run mdev-hooks detach g5 "$u3" --live --timeout 2
        echo "$output"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: g5: the guest has not given back mdev $u3 within 2 s"*"virsh shutdown g5"* ]]
        vm_mdev_exists "$u3"
        [ "$(vm_record_get "$u3" guest)" = g5 ]
        [ "$(vm_record_get "$u3" state)" = assigned ]
}

@test "virsh destroy frees every mdev of the guest, the hot-plugged one too, and detach --all empties the definition: nothing leaks" {
        u1=$(cat "$BATS_FILE_TMPDIR/u1")
        u3=$(cat "$BATS_FILE_TMPDIR/u3")
        run virsh destroy g5
        [ "$status" -eq 0 ]
        vm_udev_settle
        vm_mdev_gone "$u1"
        vm_mdev_gone "$u3"
        [ -z "$(ls "$LEDGER" 2>/dev/null)" ]
        [ -z "$(ls "$MDEV_DEVS")" ]
        run mdev-hooks detach g5 --all
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == "removed mdev $u1 (mtty-1) from 'g5': its definition" ]]
        def=$(virsh dumpxml --inactive g5)
        [[ "$def" != *"<hostdev"* ]]
        [[ "$def" != *"mh:mdev "* ]]
        run mdev-hooks reconcile --connect qemu:///system
        echo "$output"
        [ "$status" -eq 0 ]
}
