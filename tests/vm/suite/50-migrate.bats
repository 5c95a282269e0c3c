# Group 5, the real thing on Debian 13 (kernel 6.12: mtty has device-state
# migration; QEMU 10; libvirt 11): virsh save / virsh restore of a running
# guest that holds an mtty mdev, and virsh migrate --live between two
# libvirt daemons in this one VM (host A: the VM's libvirtd; host B: a
# second one in its own mount and UTS namespaces, see helpers.bash), with
# the installed hook doing its work on each side. On Debian 12 (kernel 6.1,
# QEMU 7.2, libvirt 9.0) none of it can run: mtty learned migration in 6.7,
# QEMU's vfio device-state migration needs 8.1 and libvirt's 8.6.
#
# Debian's kernel has no IOMMUFD, so QEMU gets no dirty-page report from the
# device: each mdev hostdev gets an alias and a <qemu:override> that sets
# x-device-dirty-page-tracking=off and enable-migration=on on it (without it:
# "ram_save_setup failed: Operation not supported"). The override travels in
# the migratable XML, so the hook's rewrite on the destination must keep it.
#
# A logging hook (hook-logger, as qemu.d/00-mh-log: it runs before
# mdev-hooks) records every call libvirt makes on both hosts; teardown_file
# copies the records to the results (hook-log-a/, hook-log-b/).

bats_require_minimum_version 1.5.0
load helpers

U1=5e5e0000-0000-4000-8000-000000000001
U2=5e5e0000-0000-4000-8000-000000000002
G1=5a5a0000-0000-4000-8000-0000000000e1
G2=5a5a0000-0000-4000-8000-0000000000e2
SAVE=/var/tmp/mh-g1.save
QEMU_NS=http://libvirt.org/schemas/domain/qemu/1.0

NO_MIGRATION="Debian 12 cannot migrate an mdev: mtty has device-state migration from kernel 6.7 (here 6.1), QEMU's vfio migration needs 8.1 (here 7.2)"

setup_file() {
        if [ "$(vm_suite_name)" = bookworm ]; then
                return 0
        fi
        vm_mtty_load
        vm_remove_all_mdevs
        vm_record_clear
        modprobe vfio_iommu_type1
        vm_config mtty-1
        # Migration goes over tcp://127.0.0.1; mh-vm-init brings up nothing.
        ip link set lo up
        install -m 755 /mh/suite/hook-logger /etc/libvirt/hooks/qemu.d/00-mh-log
        vm_libvirtd_wait 300
        vm_hostb_prepare
        # B only, after mdev-hooks: refuses "started" of the guest named in
        # $HOSTB/fail-started, that is once B's QEMU runs with the mdev.
        cat > "$HOSTB/etc-libvirt/hooks/qemu.d/zz-mh-fail-started" <<-'EOF'
	#!/bin/bash
	cat > /dev/null
	f=/srv/hostb/fail-started
	if [ "$2" = started ] && [ "$(cat "$f" 2> /dev/null)" = "$1" ]; then
	        echo "VM tier: host B refuses 'started' of $1" >&2
	        exit 1
	fi
	exit 0
	EOF
        chmod 755 "$HOSTB/etc-libvirt/hooks/qemu.d/zz-mh-fail-started"
        CONF=$HOSTB_CONF vm_config mtty-1
        vm_hostb_start
        vm_hostb_wait 300
}

teardown_file() {
        if [ "$(vm_suite_name)" = bookworm ]; then
                return 0
        fi
        virsh_a -q destroy g1 > /dev/null 2>&1 || true
        virsh_a -q destroy g2 > /dev/null 2>&1 || true
        virsh_b -q destroy g1b > /dev/null 2>&1 || true
        vm_hostb_stop
        rm -f /etc/libvirt/hooks/qemu.d/00-mh-log "$SAVE"
        cp -a /var/log/mh-hook-log "$MH_VM_OUT/hook-log-a" 2>/dev/null || true
        cp -a "$HOSTB/var-log/mh-hook-log" "$MH_VM_OUT/hook-log-b" 2>/dev/null || true
        /mh/suite/hook-transcript /var/log/mh-hook-log "$HOSTB/var-log/mh-hook-log" \
                > "$MH_VM_OUT/hook-transcript.txt" 2>&1 || true
        mkdir -p "$MH_VM_OUT/var-log-hostb"
        cp -a "$HOSTB/var-log/libvirt" "$MH_VM_OUT/var-log-hostb/" 2>/dev/null || true
        vm_remove_all_mdevs
        vm_record_clear
}

# Each test starts with no guest running, no mdev and no record, and the
# config enabling mtty-1 on both hosts.
setup() {
        if [ "$(vm_suite_name)" = bookworm ]; then
                skip "$NO_MIGRATION"
        fi
        virsh_a -q destroy g1 > /dev/null 2>&1 || true
        virsh_a -q destroy g2 > /dev/null 2>&1 || true
        virsh_b -q destroy g1b > /dev/null 2>&1 || true
        rm -f "$SAVE" "$HOSTB/fail-started"
        vm_remove_all_mdevs
        vm_record_clear
        vm_config mtty-1
        CONF=$HOSTB_CONF vm_config mtty-1
}

virsh_a() {
        command virsh -c qemu:///system "$@"
}
virsh_b() {
        command virsh -c "$HOSTB_URI" "$@"
}

# mig_domxml NAME GUEST_UUID MDEV_UUID: a guest that sits in its firmware
# with one migratable mtty-1 mdev (alias ua-mdev0 and the override).
mig_domxml() {
        cat <<XML
<domain type='qemu' xmlns:qemu='$QEMU_NS'>
  <name>$1</name>
  <uuid>$2</uuid>
  <memory unit='MiB'>32</memory>
  <vcpu>1</vcpu>
  <metadata>
    <mh:mdevs xmlns:mh='http://mdev-hooks.org/xmlns/domain/1.0'>
      <mh:mdev uuid='$3' type='mtty-1'/>
    </mh:mdevs>
  </metadata>
  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <hostdev mode='subsystem' type='mdev' model='vfio-pci'>
      <source><address uuid='$3'/></source>
      <alias name='ua-mdev0'/>
    </hostdev>
    <video><model type='none'/></video>
    <memballoon model='none'/>
  </devices>
  <qemu:override>
    <qemu:device alias='ua-mdev0'>
      <qemu:frontend>
        <qemu:property name='x-device-dirty-page-tracking' type='string' value='off'/>
        <qemu:property name='enable-migration' type='string' value='on'/>
      </qemu:frontend>
    </qemu:device>
  </qemu:override>
</domain>
XML
}

define_a() {
        mig_domxml "$@" > "$BATS_TEST_TMPDIR/$1.xml"
        virsh_a -q define "$BATS_TEST_TMPDIR/$1.xml"
}

# The mdev UUID in a running guest's live XML: xml_uuid A|B NAME
xml_uuid() {
        local v=virsh_a
        [ "$1" = A ] || v=virsh_b
        "$v" dumpxml "$2" | sed -n "s/.*<address uuid=['\"]\([0-9a-f-]*\)['\"].*/\1/p" | head -1
}

# qemu_has_mdev PIDFILE UUID: that QEMU was given the mdev (with the
# override's properties) and holds its VFIO group open.
qemu_has_mdev() {
        local pid group fd cmdline
        pid=$(cat "$1") || return 1
        cmdline=$(tr '\0' ' ' < "/proc/$pid/cmdline")
        [[ "$cmdline" == *"/sys/bus/mdev/devices/$2"* ]] || {
                echo "QEMU $pid was not given $2: $cmdline" >&2
                return 1
        }
        [[ "$cmdline" == *'"x-device-dirty-page-tracking":"off"'* || "$cmdline" == *"x-device-dirty-page-tracking=off"* ]] || {
                echo "QEMU $pid runs without the override: $cmdline" >&2
                return 1
        }
        group=$(basename "$(readlink "$MDEV_DEVS/$2/iommu_group")")
        for fd in "/proc/$pid/fd/"*; do
                [ "$(readlink "$fd")" != "/dev/vfio/$group" ] || return 0
        done
        echo "QEMU $pid does not hold /dev/vfio/$group open" >&2
        return 1
}
pidfile_a() { echo "/run/libvirt/qemu/$1.pid"; }
pidfile_b() { echo "$HOSTB/run-libvirt/qemu/$1.pid"; }

# The whole state a refused operation must leave as it was: sysfs's mdevs
# and every record file with its content.
state_snapshot() {
        ls "$MDEV_DEVS"
        local f
        for f in "$LEDGER"/*; do
                [ -f "$f" ] && { echo "== $f"; cat "$f"; }
        done
        return 0
}

migrate_g1() {
        virsh_a migrate --live --dname g1b g1 "$HOSTB_URI" --migrateuri tcp://127.0.0.1
}

@test "save/restore: virsh save releases the mdev, and virsh restore, with the saved UUID gone, creates it again and the guest runs" {
        define_a g1 "$G1" "$U1"
        run virsh_a start g1
        echo "$output"
        [ "$status" -eq 0 ]
        qemu_has_mdev "$(pidfile_a g1)" "$U1"
        run virsh_a save g1 "$SAVE"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(virsh_a domstate g1)" = "shut off" ]
        vm_mdev_gone "$U1"
        [ ! -e "$LEDGER/$U1" ]
        run virsh_a restore "$SAVE"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(virsh_a domstate g1)" = running ]
        [ "$(xml_uuid A g1)" = "$U1" ]
        qemu_has_mdev "$(pidfile_a g1)" "$U1"
        [ "$(vm_record_get "$U1" guest)" = g1 ]
        [ "$(vm_record_get "$U1" state)" = assigned ]
        run virsh_a destroy g1
        [ "$status" -eq 0 ]
        vm_mdev_gone "$U1"
}

@test "save/restore: with release = keep the saved guest's mdev stays free and restore claims it again" {
        vm_config mtty-1 release=keep
        define_a g1 "$G1" "$U1"
        run virsh_a start g1
        [ "$status" -eq 0 ]
        run virsh_a save g1 "$SAVE"
        echo "$output"
        [ "$status" -eq 0 ]
        vm_mdev_exists "$U1"
        [ "$(vm_record_get "$U1" state)" = free ]
        run virsh_a restore "$SAVE"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(virsh_a domstate g1)" = running ]
        [ "$(xml_uuid A g1)" = "$U1" ]
        qemu_has_mdev "$(pidfile_a g1)" "$U1"
        [ "$(vm_record_get "$U1" guest)" = g1 ]
        [ "$(vm_record_get "$U1" state)" = assigned ]
}

@test "save/restore: the saved UUID taken by another guest: restore's hook creates another mdev, rewrites the XML, and the guest runs with it" {
        define_a g1 "$G1" "$U1"
        define_a g2 "$G2" "$U1"
        run virsh_a start g1
        [ "$status" -eq 0 ]
        run virsh_a save g1 "$SAVE"
        [ "$status" -eq 0 ]
        run virsh_a start g2
        echo "$output"
        [ "$status" -eq 0 ]
        qemu_has_mdev "$(pidfile_a g2)" "$U1"
        run virsh_a restore "$SAVE"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(virsh_a domstate g1)" = running ]
        new=$(xml_uuid A g1)
        echo "g1 now has $new"
        [ -n "$new" ]
        [ "$new" != "$U1" ]
        [ "$(vm_mdev_type "$new")" = mtty-1 ]
        qemu_has_mdev "$(pidfile_a g1)" "$new"
        qemu_has_mdev "$(pidfile_a g2)" "$U1"
        [ "$(vm_record_get "$new" guest)" = g1 ]
        [ "$(vm_record_get "$new" state)" = assigned ]
        [ "$(vm_record_get "$U1" guest)" = g2 ]
        # the override survived the rewrite
        virsh_a dumpxml g1 | grep -q "x-device-dirty-page-tracking"
        run virsh_a destroy g1
        vm_mdev_gone "$new"
        vm_mdev_exists "$U1"
}

@test "migrate --live: B's hook finds the source's UUID held, creates another mdev, rewrites the XML (override kept); the guest runs on B and A releases its mdev" {
        define_a g1 "$G1" "$U1"
        run virsh_a start g1
        echo "$output"
        [ "$status" -eq 0 ]
        qemu_has_mdev "$(pidfile_a g1)" "$U1"
        run migrate_g1
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(virsh_b domstate g1b)" = running ]
        new=$(xml_uuid B g1b)
        echo "g1b on B has $new"
        [ -n "$new" ]
        [ "$new" != "$U1" ]
        [ "$(vm_mdev_type "$new")" = mtty-1 ]
        qemu_has_mdev "$(pidfile_b g1b)" "$new"
        virsh_b dumpxml g1b | grep -q "x-device-dirty-page-tracking"
        [ "$(vm_record_get "$new" guest)" = g1b ]
        [ "$(vm_record_get "$new" state)" = assigned ]
        # A: the guest is gone, its mdev released (created by the hook: removed)
        [ "$(virsh_a domstate g1)" = "shut off" ]
        vm_udev_settle
        vm_mdev_gone "$U1"
        [ ! -e "$LEDGER/$U1" ]
        run virsh_b destroy g1b
        [ "$status" -eq 0 ]
        vm_mdev_gone "$new"
        [ "$(vm_avail mtty-1)" -eq 24 ]
}

@test "migrate --live refused by B (type not offered there): fails on both sides with the hook's reason, nothing leaked" {
        CONF=$HOSTB_CONF vm_config mtty-2
        define_a g1 "$G1" "$U1"
        run virsh_a start g1
        [ "$status" -eq 0 ]
        before=$(state_snapshot)
        run migrate_g1
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"mdev-hooks: g1b: "*"mtty-1"* ]]
        [ "$(virsh_a domstate g1)" = running ]
        qemu_has_mdev "$(pidfile_a g1)" "$U1"
        [ -z "$(virsh_b list --all --name | grep -x g1b)" ]
        vm_udev_settle
        [ "$(state_snapshot)" = "$before" ]
        [ "$(vm_record_get "$U1" guest)" = g1 ]
        [ "$(vm_record_get "$U1" state)" = assigned ]
}

@test "migrate --live refused by B (no capacity): fails on both sides with the hook's reason, nothing leaked" {
        define_a g1 "$G1" "$U1"
        run virsh_a start g1
        [ "$status" -eq 0 ]
        # 23 ports left after g1's: 11 mtty-2 and 1 mtty-1 made by hand.
        for i in $(seq 11); do
                printf '7a7a0000-0000-4000-8000-%012d\n' "$i" > "$MTTY_TYPES/mtty-2/create"
        done
        echo 7a7a0000-0000-4000-8000-000000000099 > "$MTTY_TYPES/mtty-1/create"
        vm_udev_settle
        [ "$(vm_avail mtty-1)" -eq 0 ]
        before=$(state_snapshot)
        run migrate_g1
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"mdev-hooks: g1b: no capacity for mtty-1"* ]]
        [ "$(virsh_a domstate g1)" = running ]
        qemu_has_mdev "$(pidfile_a g1)" "$U1"
        [ -z "$(virsh_b list --all --name | grep -x g1b)" ]
        vm_udev_settle
        [ "$(state_snapshot)" = "$before" ]
        [ "$(vm_avail mtty-1)" -eq 0 ]
}

# hook_calls_b GUEST FROM: B's hook calls for GUEST after the first FROM
# lines of B's log, one "OP SUBOP EXTRA" a line.
hook_calls_b() {
        tail -n "+$(($2 + 1))" "$HOSTB/var-log/mh-hook-log/calls" |
                awk -v g="$1" '$6 == g { print $7, $8, $9 }'
}

@test "migrate --live that fails once B's QEMU runs (a later hook of B refuses 'started'): B's release removes what its hook made, A keeps the guest, nothing leaked" {
        define_a g1 "$G1" "$U1"
        run virsh_a start g1
        [ "$status" -eq 0 ]
        before=$(state_snapshot)
        from=$(wc -l < "$HOSTB/var-log/mh-hook-log/calls")
        echo g1b > "$HOSTB/fail-started"
        run migrate_g1
        rm -f "$HOSTB/fail-started"
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"host B refuses 'started' of g1b"* ]]
        # what libvirt 11 ran on B (recorded in the transcript as well)
        calls=$(hook_calls_b g1b "$from")
        echo "B's hook calls: $calls"
        [ "$calls" = "$(printf '%s\n' 'migrate begin -' 'prepare begin -' 'start begin -' 'started begin -' \
                'stopped end -' 'release end failed')" ]
        [ "$(virsh_a domstate g1)" = running ]
        qemu_has_mdev "$(pidfile_a g1)" "$U1"
        [ -z "$(virsh_b list --all --name | grep -x g1b)" ]
        vm_udev_settle
        [ "$(state_snapshot)" = "$before" ]
        [ "$(vm_record_get "$U1" guest)" = g1 ]
        [ "$(vm_record_get "$U1" state)" = assigned ]
}
