#!/usr/bin/env bats
# The udev helper (mdev-hooks-udev) run as udev runs it: `mdev-hooks-udev %k`
# with only the event's properties (ACTION, DEVPATH, SUBSYSTEM, SEQNUM,
# MDEV_STATE) in its environment, against the sysfs simulator; and the rules
# file, parsed and matched by the installed udevadm.

load common
load ../sim/sim

OLD_BOOT=0badb007-0000-4000-8000-000000000001
U1=6d7a0000-0000-4000-8000-000000000001
U2=6d7a0000-0000-4000-8000-000000000002
U3=6d7a0000-0000-4000-8000-000000000003
U4=6d7a0000-0000-4000-8000-000000000004

SEQ=0

# udev_run ACTION SUBSYSTEM DEVPATH [MDEV_STATE]: runs the helper with exactly
# udev's environment (plus MDEV_HOOKS_ROOT) and %k = the last component of
# DEVPATH, through bats' `run`.
udev_run() {
        local action=$1 subsystem=$2 devpath=$3 state=${4:-}
        SEQ=$((SEQ + 1))
        run env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION="$action" SUBSYSTEM="$subsystem" \
                DEVPATH="$devpath" SEQNUM="$SEQ" ${state:+MDEV_STATE=$state} \
                "$MH_UDEV" "${devpath##*/}"
}

# devpath_of PATH-UNDER-SYS: the device's DEVPATH (the link resolved, /sys cut off).
devpath_of() {
        local p
        p=$(readlink -f "$SIM_SYS/$1")
        printf '%s\n' "${p#"$SIM_SYS"}"
}

# parent_event PARENT registered|unregistered: the parent's own device (pci,
# or mtty for the kernel's sample) sends the event.
parent_event() {
        if [ "$1" = mtty ]; then
                udev_run change mtty /devices/virtual/mtty/mtty "$2"
        else
                udev_run change pci "$(devpath_of "bus/pci/devices/$1")" "$2"
        fi
}

# mdev_event ACTION PARENT UUID
mdev_event() {
        local pdev=/devices/virtual/mtty/mtty
        [ "$2" = mtty ] || pdev=$(devpath_of "bus/pci/devices/$2")
        udev_run "$1" mdev "$pdev/$3"
}

# writes_to PATH-UNDER-SYS: how many writes the simulator counted on a file.
writes_to() {
        sim_counters | awk -v p="$1" '$7 == p { print $3; found = 1 } END { if (!found) print 0 }'
}

# --- a parent registers ----------------------------------------------------

@test "registered after a reboot drops free records and marks the guests' records lost" {
        sim_mount mtty
        config_write <<EOF
[devices]
enabled_mdev_types = mtty-1
EOF
        record_write "$U1" mtty mtty-1 free created "" boot_id="$OLD_BOOT"
        record_write "$U2" mtty mtty-1 assigned created web1 boot_id="$OLD_BOOT"
        parent_event mtty registered
        [ "$status" -eq 0 ]
        record_absent "$U1"
        [ "$(record_get "$U2" state)" = lost ]
        [ "$(record_get "$U2" guest)" = web1 ]
        [ -z "$(sim_mdevs)" ]
}

@test "registered with recreate = eager makes the guests' mdevs again with their UUIDs" {
        sim_mount nvidia-timesliced
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-35
[hooks]
recreate = eager
EOF
        record_write "$U1" 0000:84:00.0 nvidia-35 assigned created web1 boot_id="$OLD_BOOT"
        record_write "$U2" 0000:84:00.0 nvidia-35 lost created web2 boot_id="$OLD_BOOT"
        record_write "$U3" 0000:84:00.0 nvidia-35 free created "" boot_id="$OLD_BOOT"
        parent_event 0000:84:00.0 registered
        [ "$status" -eq 0 ]
        for u in "$U1" "$U2"; do
                [ "$(record_get "$u" state)" = assigned ]
                [ "$(record_get "$u" origin)" = created ]
                [ "$(record_get "$u" boot_id)" = "$(boot_id)" ]
                [ "$(readlink "$SIM_SYS/bus/mdev/devices/$u/mdev_type")" = ../mdev_supported_types/nvidia-35 ]
                [[ "$(readlink -f "$SIM_SYS/bus/mdev/devices/$u")" == */0000:84:00.0/$u ]]
        done
        record_absent "$U3"
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U3" ]
}

@test "registered leaves the records of other parents from this boot alone" {
        sim_mount nvidia-timesliced
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-35
EOF
        # Untrue (no such mdev), but another parent's business.
        record_write "$U1" 0000:85:00.0 nvidia-35 assigned created web1 boot_id="$(boot_id)"
        record_write "$U2" 0000:85:00.0 nvidia-35 free created "" boot_id="$(boot_id)"
        parent_event 0000:84:00.0 registered
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = assigned ]
        [ "$(record_get "$U2" state)" = free ]
}

@test "the first registered event after a reboot sweeps every parent's records from the earlier boot" {
        sim_mount nvidia-timesliced
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-35
EOF
        record_write "$U1" 0000:85:00.0 nvidia-35 assigned created web1 boot_id="$OLD_BOOT"
        record_write "$U2" 0000:86:00.0 nvidia-35 free created "" boot_id="$OLD_BOOT"
        sim_unregister 0000:87:00.0
        record_write "$U3" 0000:87:00.0 nvidia-35 incoming created web3 boot_id="$OLD_BOOT"
        parent_event 0000:84:00.0 registered
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = lost ]
        record_absent "$U2"
        [ "$(record_get "$U3" state)" = lost ]
        [ "$(cat "$MDEV_HOOKS_ROOT/run/mdev-hooks/swept")" = "$(boot_id)" ]
}

@test "a parent registered after the boot's sweep finds its records through the index, even entries a power loss lost" {
        sim_mount nvidia-timesliced
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-35
[hooks]
recreate = eager
EOF
        # The record of a guest's mdev from the earlier boot, already lost,
        # and a parent index that lacks its entry (the index is not fsynced).
        record_write "$U1" 0000:85:00.0 nvidia-35 lost created web1 boot_id="$OLD_BOOT"
        mkdir -p "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks.by-parent"
        sim_unregister 0000:85:00.0
        # Another parent's event sweeps the boot's stale records first.
        parent_event 0000:84:00.0 registered
        [ "$status" -eq 0 ]
        [ "$(cat "$MDEV_HOOKS_ROOT/run/mdev-hooks/swept")" = "$(boot_id)" ]
        [ "$(record_get "$U1" state)" = lost ]
        [ -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks.by-parent/0000:85:00.0/$U1" ]
        # The vendor driver of 0000:85:00.0 comes later: its event reads only
        # its own records, and finds this one.
        sim_register 0000:85:00.0
        parent_event 0000:85:00.0 registered
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = assigned ]
        [[ "$(readlink -f "$SIM_SYS/bus/mdev/devices/$U1")" == */0000:85:00.0/$U1 ]]
}

@test "after a reboot the sweep tells what it did in one line per guest and per parent, naming the UUIDs" {
        sim_mount nvidia-timesliced
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-35
EOF
        record_write "$U1" 0000:84:00.0 nvidia-35 assigned created web1 boot_id="$OLD_BOOT"
        record_write "$U2" 0000:85:00.0 nvidia-35 assigned created web1 boot_id="$OLD_BOOT"
        record_write "$U3" 0000:84:00.0 nvidia-35 incoming created web2 boot_id="$OLD_BOOT"
        record_write "$U4" 0000:86:00.0 nvidia-35 free created "" boot_id="$OLD_BOOT"
        # As parent_event does, with the dropped free records' lines (info) too.
        run env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" MDEV_HOOKS_LOG_LEVEL=info ACTION=change SUBSYSTEM=pci \
                DEVPATH="$(devpath_of bus/pci/devices/0000:84:00.0)" SEQNUM=1 MDEV_STATE=registered \
                "$MH_UDEV" 0000:84:00.0
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = lost ]
        [ "$(record_get "$U2" state)" = lost ]
        [ "$(record_get "$U3" state)" = lost ]
        record_absent "$U4"
        echo "$output"
        [ "$(grep -c "guest 'web1'" <<< "$output")" -eq 1 ]
        [[ "$output" == *"2 mdev(s) of guest 'web1' from an earlier boot marked lost; they are made again when the guest starts: $U1 (nvidia-35 on '0000:84:00.0'), $U2 (nvidia-35 on '0000:85:00.0')"* ]]
        [[ "$output" == *"1 mdev(s) of guest 'web2' from an earlier boot marked lost; they are made again when the guest starts: $U3 (nvidia-35 on '0000:84:00.0')"* ]]
        [[ "$output" == *"1 free mdev(s) on '0000:86:00.0' from an earlier boot: records dropped: $U4 (nvidia-35)"* ]]
        [ "$(wc -l <<< "$output")" -eq 3 ]
}

@test "registered keeps records of this boot whose mdevs exist" {
        sim_mount nvidia-timesliced
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-35
EOF
        sim_create 0000:84:00.0 nvidia-35 "$U1"
        sim_create 0000:84:00.0 nvidia-35 "$U2"
        record_write "$U1" 0000:84:00.0 nvidia-35 assigned created web1 boot_id="$(boot_id)"
        record_write "$U2" 0000:84:00.0 nvidia-35 free created "" boot_id="$(boot_id)"
        before=$(cat "$MDEV_HOOKS_ROOT"/var/lib/mdev-hooks/*)
        parent_event 0000:84:00.0 registered
        [ "$status" -eq 0 ]
        [ "$(cat "$MDEV_HOOKS_ROOT"/var/lib/mdev-hooks/*)" = "$before" ]
}

@test "registered logs a configured type that the parent does not offer" {
        sim_mount nvidia-timesliced
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-35, mtty-1
[mdev_mtty-1]
device_addresses = 0000:84:00.0
EOF
        parent_event 0000:84:00.0 registered
        [ "$status" -eq 0 ]
        [[ "$output" == *"'0000:84:00.0' does not offer type 'mtty-1'"* ]]
        [[ "$output" == *"nvidia-35, nvidia-36"* ]]
        parent_event 0000:85:00.0 registered
        [ "$status" -eq 0 ]
        [ -z "$output" ]
}

@test "registered with a broken config still drops the free records of an earlier boot" {
        sim_mount mtty
        config_write <<EOF
[devices]
enabled_mdev_types = mtty-1
[hooks]
no_such_key = 1
EOF
        record_write "$U1" mtty mtty-1 free created "" boot_id="$OLD_BOOT"
        parent_event mtty registered
        [ "$status" -eq 0 ]
        [[ "$output" == *"cannot use the config, so only the record is kept up to date: /etc/mdev-hooks/mdev-hooks.conf:4: "*"no_such_key"*"; run 'mdev-hooks check-config'"* ]]
        record_absent "$U1"
}

@test "registered with a config of several errors names the first and how many more, once" {
        sim_mount mtty
        config_write <<EOF
[devices]
enabled_mdev_types = mtty-1
[hooks]
no_such_key = 1
other_key = 2
EOF
        parent_event mtty registered
        [ "$status" -eq 0 ]
        [[ "$output" == *"mdev-hooks.conf:4: "*"no_such_key"*" (and 1 more errors); run 'mdev-hooks check-config'"* ]]
        [ "$(grep -c "cannot use the config" <<< "$output")" -eq 1 ]
}

# --- a parent unregisters --------------------------------------------------

@test "unregistered marks the parent's guest mdevs lost and drops its free ones" {
        sim_mount nvidia-timesliced
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-35
EOF
        sim_create 0000:84:00.0 nvidia-35 "$U1"
        sim_create 0000:84:00.0 nvidia-35 "$U2"
        sim_create 0000:85:00.0 nvidia-35 "$U3"
        record_write "$U1" 0000:84:00.0 nvidia-35 assigned created web1 boot_id="$(boot_id)"
        record_write "$U2" 0000:84:00.0 nvidia-35 free created "" boot_id="$(boot_id)"
        record_write "$U3" 0000:85:00.0 nvidia-35 assigned created web3 boot_id="$(boot_id)"
        sim_unregister 0000:84:00.0
        parent_event 0000:84:00.0 unregistered
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = lost ]
        record_absent "$U2"
        [ "$(record_get "$U3" state)" = assigned ]
        [[ "$output" == *"guest 'web1'"*"gone with its parent"* ]]
}

@test "a parent that unregisters and registers again gets its guests' mdevs back with recreate = eager" {
        sim_mount nvidia-timesliced
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-35
[hooks]
recreate = eager
EOF
        sim_create 0000:84:00.0 nvidia-35 "$U1"
        record_write "$U1" 0000:84:00.0 nvidia-35 assigned created web1 boot_id="$(boot_id)"
        # The vendor driver reloads: the parent goes with its mdevs, then comes back.
        sim_unregister 0000:84:00.0
        parent_event 0000:84:00.0 unregistered
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = lost ]
        sim_register 0000:84:00.0
        parent_event 0000:84:00.0 registered
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = assigned ]
        [ "$(record_get "$U1" guest)" = web1 ]
        [ "$(readlink "$SIM_SYS/bus/mdev/devices/$U1/mdev_type")" = ../mdev_supported_types/nvidia-35 ]
}

# --- an mdev goes or comes outside mdev-hooks ------------------------------

@test "an mdev removed by hand: its free record is dropped without a warning" {
        sim_mount nvidia-timesliced
        sim_create 0000:84:00.0 nvidia-35 "$U1"
        record_write "$U1" 0000:84:00.0 nvidia-35 free created "" boot_id="$(boot_id)"
        sim_remove "$U1"
        mdev_event remove 0000:84:00.0 "$U1"
        [ "$status" -eq 0 ]
        record_absent "$U1"
        [[ "$output" != *warning* && "$output" != *"removed outside"* ]]
}

@test "an mdev a guest holds removed by hand: marked lost with a warning naming the guest" {
        sim_mount nvidia-timesliced
        sim_create 0000:84:00.0 nvidia-35 "$U1"
        record_write "$U1" 0000:84:00.0 nvidia-35 assigned created web1 boot_id="$(boot_id)"
        sim_remove "$U1"
        mdev_event remove 0000:84:00.0 "$U1"
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = lost ]
        [ "$(record_get "$U1" guest)" = web1 ]
        [[ "$output" == *"$U1 of guest 'web1'"*"removed outside mdev-hooks"* ]]
}

@test "an mdev mdev-hooks removes under the lock gives no false warning" {
        sim_mount nvidia-timesliced
        sim_create 0000:84:00.0 nvidia-35 "$U1"
        record_write "$U1" 0000:84:00.0 nvidia-35 assigned created web1 boot_id="$(boot_id)"
        mkdir -p "$MDEV_HOOKS_ROOT/run/mdev-hooks"
        # Play a hook's release: take the lock, remove the mdev (its udev
        # event starts now), then forget the record, then let go.
        exec {lockfd}>"$MDEV_HOOKS_ROOT/run/mdev-hooks/lock"
        flock "$lockfd"
        sim_remove "$U1"
        pdev=$(devpath_of bus/pci/devices/0000:84:00.0)
        env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION=remove SUBSYSTEM=mdev DEVPATH="$pdev/$U1" \
                SEQNUM=1 "$MH_UDEV" "$U1" > "$BATS_TEST_TMPDIR/helper.out" 2>&1 {lockfd}>&- &
        helper=$!
        # The helper decides only once the hook is done: it waits for the lock.
        lock_waiter "$MDEV_HOOKS_ROOT/run/mdev-hooks/lock"
        rm "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$U1"
        exec {lockfd}>&-
        wait "$helper"
        record_absent "$U1"
        cat "$BATS_TEST_TMPDIR/helper.out"
        [ ! -s "$BATS_TEST_TMPDIR/helper.out" ]
}

@test "the add event of an mdev a hook created, its record true, does not wait for the lock" {
        sim_mount nvidia-timesliced
        config_write "$(printf '%s\n' '[devices]' 'enabled_mdev_types = nvidia-35' '[hooks]' 'lock_timeout = 1')"
        # A prepare has written the record and created the mdev; it (or the
        # next guest's) still holds the lock when the add event comes.
        record_write "$U1" 0000:84:00.0 nvidia-35 assigned created web1 boot_id="$(boot_id)"
        sim_create 0000:84:00.0 nvidia-35 "$U1"
        local before lockfd
        before=$(cat "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$U1")
        mkdir -p "$MDEV_HOOKS_ROOT/run/mdev-hooks"
        exec {lockfd}>"$MDEV_HOOKS_ROOT/run/mdev-hooks/lock"
        flock "$lockfd"
        # Waiting for the lock would time out after 1 s and say so.
        mdev_event add 0000:84:00.0 "$U1"
        exec {lockfd}>&-
        echo "$output"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(cat "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$U1")" = "$before" ]
}

@test "an mdev mdev-hooks never recorded stays unrecorded when it comes and goes" {
        sim_mount nvidia-timesliced
        sim_create 0000:84:00.0 nvidia-35 "$U1"
        mdev_event add 0000:84:00.0 "$U1"
        [ "$status" -eq 0 ]
        record_absent "$U1"
        sim_remove "$U1"
        mdev_event remove 0000:84:00.0 "$U1"
        [ "$status" -eq 0 ]
        record_absent "$U1"
        [ -z "$output" ]
}

@test "a lost mdev that appears again on its parent is the guest's again, borrowed" {
        sim_mount nvidia-timesliced
        record_write "$U1" 0000:84:00.0 nvidia-35 lost created web1 boot_id="$OLD_BOOT"
        sim_create 0000:84:00.0 nvidia-35 "$U1"
        mdev_event add 0000:84:00.0 "$U1"
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = assigned ]
        [ "$(record_get "$U1" origin)" = borrowed ]
        [ "$(record_get "$U1" boot_id)" = "$(boot_id)" ]
}

@test "an mdev of another type with a lost record's UUID does not revive the record" {
        sim_mount nvidia-timesliced
        record_write "$U1" 0000:84:00.0 nvidia-35 lost created web1 boot_id="$(boot_id)"
        sim_create 0000:84:00.0 nvidia-36 "$U1"
        mdev_event add 0000:84:00.0 "$U1"
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = lost ]
}

@test "with the qemu hook: an mdev a guest got from prepare and lost by hand is marked lost, its release warns of nothing" {
        [ -x "$MH_QEMU_HOOK" ] || skip "the qemu hook is not built"
        sim_mount nvidia-timesliced
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-35
EOF
        cat > "$BATS_TEST_TMPDIR/web1.xml" <<EOF
<domain type='kvm'>
  <name>web1</name>
  <uuid>0c3e1a52-7b1d-4c55-9a6e-2f1d5c0e9b11</uuid>
  <devices>
    <hostdev mode='subsystem' type='mdev' managed='no' model='vfio-pci'>
      <source><address uuid='$U1'/></source>
    </hostdev>
  </devices>
</domain>
EOF
        run "$MH_QEMU_HOOK" web1 prepare begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 0 ]
        parent=$(basename "$(dirname "$(readlink -f "$SIM_SYS/bus/mdev/devices/$U1")")")
        # Its own add event: the record is true, nothing changes.
        before=$(cat "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$U1")
        mdev_event add "$parent" "$U1"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(cat "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$U1")" = "$before" ]
        # Removed by hand while the guest runs.
        sim_remove "$U1"
        mdev_event remove "$parent" "$U1"
        [ "$status" -eq 0 ]
        [[ "$output" == *"guest 'web1'"*"removed outside mdev-hooks"* ]]
        [ "$(record_get "$U1" state)" = lost ]
        # The guest stops: its release, and the remove event of a second
        # prepare/release round, produce no warning.
        run "$MH_QEMU_HOOK" web1 release end - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 0 ]
        run "$MH_QEMU_HOOK" web1 prepare begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 0 ]
        run "$MH_QEMU_HOOK" web1 release end - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 0 ]
        mdev_event remove "$parent" "$U1"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        record_absent "$U1"
}

# --- SR-IOV physical functions ---------------------------------------------

@test "a PF named in [sriov] gets its VFs once, however often its event repeats" {
        sim_mount nvidia-sriov-disabled
        config_write <<EOF
[sriov]
0000:3b:00.0 = 4
EOF
        pdev=$(devpath_of bus/pci/devices/0000:3b:00.0)
        sim_counters_reset
        udev_run bind pci "$pdev"
        [ "$status" -eq 0 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:3b:00.0/sriov_numvfs")" = 4 ]
        [ "$(ls "$SIM_SYS/class/mdev_bus" | wc -l)" -eq 4 ]
        udev_run bind pci "$pdev"
        [ "$status" -eq 0 ]
        udev_run add pci "$pdev"
        [ "$status" -eq 0 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:3b:00.0/sriov_numvfs")" = 4 ]
        [ "$(writes_to "$pdev/sriov_numvfs")" -eq 1 ]
}

@test "[sriov] max enables sriov_totalvfs VFs" {
        sim_mount nvidia-sriov-disabled
        config_write <<EOF
[sriov]
0000:3b:00.0 = max
EOF
        udev_run bind pci "$(devpath_of bus/pci/devices/0000:3b:00.0)"
        [ "$status" -eq 0 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:3b:00.0/sriov_numvfs")" = 16 ]
}

@test "a PF's add without a bound driver waits for bind" {
        sim_mount nvidia-sriov-disabled
        config_write <<EOF
[sriov]
0000:3b:00.0 = 2
EOF
        pdev=$(devpath_of bus/pci/devices/0000:3b:00.0)
        # The simulator's PFs have no driver link: as at driver load, "add"
        # comes before the driver binds.
        [ ! -e "$SIM_SYS/bus/pci/devices/0000:3b:00.0/driver" ]
        udev_run add pci "$pdev"
        [ "$status" -eq 0 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:3b:00.0/sriov_numvfs")" = 0 ]
        udev_run bind pci "$pdev"
        [ "$status" -eq 0 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:3b:00.0/sriov_numvfs")" = 2 ]
}

@test "[sriov] command runs once with the PF's address, its output logged" {
        sim_mount nvidia-sriov-disabled
        cat > "$BATS_TEST_TMPDIR/sriov-manage" <<EOF
#!/bin/sh
echo "\$@" >> "$BATS_TEST_TMPDIR/calls"
echo "Enabling VFs on \$2"
EOF
        chmod +x "$BATS_TEST_TMPDIR/sriov-manage"
        config_write <<EOF
[sriov]
0000:3b:00.0 = max
command = $BATS_TEST_TMPDIR/sriov-manage -e
EOF
        pdev=$(devpath_of bus/pci/devices/0000:3b:00.0)
        udev_run bind pci "$pdev"
        [ "$status" -eq 0 ]
        [[ "$output" == *"Enabling VFs on 0000:3b:00.0"* ]]
        udev_run bind pci "$pdev"
        [ "$status" -eq 0 ]
        [ "$(cat "$BATS_TEST_TMPDIR/calls")" = "-e 0000:3b:00.0" ]
        # The command, not the helper, enables the VFs.
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:3b:00.0/sriov_numvfs")" = 0 ]
}

@test "a failed [sriov] command is tried again by the next event" {
        sim_mount nvidia-sriov-disabled
        cat > "$BATS_TEST_TMPDIR/sriov-manage" <<EOF
#!/bin/sh
echo "\$@" >> "$BATS_TEST_TMPDIR/calls"
exit 3
EOF
        chmod +x "$BATS_TEST_TMPDIR/sriov-manage"
        config_write <<EOF
[sriov]
0000:3b:00.0 = max
command = $BATS_TEST_TMPDIR/sriov-manage -e
EOF
        pdev=$(devpath_of bus/pci/devices/0000:3b:00.0)
        udev_run bind pci "$pdev"
        [ "$status" -eq 0 ]
        [[ "$output" == *"failed with exit status 3"* ]]
        udev_run bind pci "$pdev"
        [ "$status" -eq 0 ]
        [ "$(wc -l < "$BATS_TEST_TMPDIR/calls")" -eq 2 ]
}

@test "a PF not named in [sriov] is left untouched" {
        sim_mount nvidia-sriov-disabled
        cat > "$BATS_TEST_TMPDIR/sriov-manage" <<EOF
#!/bin/sh
echo "\$@" >> "$BATS_TEST_TMPDIR/calls"
EOF
        chmod +x "$BATS_TEST_TMPDIR/sriov-manage"
        config_write <<EOF
[sriov]
0000:3b:00.0 = 4
EOF
        pdev=$(devpath_of bus/pci/devices/0000:5e:00.0)
        sim_counters_reset
        udev_run bind pci "$pdev"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:5e:00.0/sriov_numvfs")" = 0 ]
        [ "$(sim_counter_total writes)" -eq 0 ]
        # Nor does a command run for it.
        config_write <<EOF
[sriov]
0000:3b:00.0 = 4
command = $BATS_TEST_TMPDIR/sriov-manage -e
EOF
        udev_run bind pci "$pdev"
        [ "$status" -eq 0 ]
        [ ! -e "$BATS_TEST_TMPDIR/calls" ]
}

# --- events that do not concern mdev-hooks ---------------------------------

@test "events that do not concern mdev-hooks exit 0 at once and change nothing" {
        sim_mount nvidia-timesliced
        record_write "$U1" 0000:84:00.0 nvidia-35 assigned created web1 boot_id="$OLD_BOOT"
        pdev=$(devpath_of bus/pci/devices/0000:84:00.0)
        udev_run change pci "$pdev"
        [ "$status" -eq 0 ]
        udev_run remove pci "$pdev"
        [ "$status" -eq 0 ]
        udev_run change mdev "$pdev/$U1"
        [ "$status" -eq 0 ]
        udev_run add block /devices/virtual/block/loop0
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = assigned ]
        [ ! -e "$MDEV_HOOKS_ROOT/run/mdev-hooks/lock" ]
        # Not started by udev at all: says so, still exits 0.
        run env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" "$MH_UDEV"
        [ "$status" -eq 0 ]
        [[ "$output" == *"not started by udev"* ]]
}

# --- many at once ----------------------------------------------------------

@test "256 parents registered at once all finish and leave a consistent record" {
        sim_mount large
        config_write <<EOF
[devices]
enabled_mdev_types = nvidia-100
[hooks]
recreate = eager
EOF
        mapfile -t parents < <(ls "$SIM_SYS/class/mdev_bus")
        [ "${#parents[@]}" -eq 256 ]
        for i in "${!parents[@]}"; do
                record_write "$(printf '6d7a0001-0000-4000-8000-%012x' "$i")" "${parents[$i]}" nvidia-100 assigned created "guest$i" boot_id="$OLD_BOOT"
                record_write "$(printf '6d7a0002-0000-4000-8000-%012x' "$i")" "${parents[$i]}" nvidia-100 free created "" boot_id="$OLD_BOOT"
        done
        pids=()
        for i in "${!parents[@]}"; do
                env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION=change SUBSYSTEM=pci \
                        DEVPATH="$(devpath_of "class/mdev_bus/${parents[$i]}")" SEQNUM="$((i + 1))" MDEV_STATE=registered \
                        "$MH_UDEV" "${parents[$i]}" > "$BATS_TEST_TMPDIR/out.$i" 2>&1 &
                pids+=($!)
        done
        failed=0
        for p in "${pids[@]}"; do
                wait "$p" || failed=$((failed + 1))
        done
        [ "$failed" -eq 0 ]
        # An event that waited for the lock in vain has had its work done by
        # another one's sweep: what matters is the record below.
        grep -h "not handled" "$BATS_TEST_TMPDIR"/out.* || true
        boot=$(boot_id)
        for i in "${!parents[@]}"; do
                u=$(printf '6d7a0001-0000-4000-8000-%012x' "$i")
                [ "$(record_get "$u" state)" = assigned ]
                [ "$(record_get "$u" boot_id)" = "$boot" ]
                [[ "$(readlink -f "$SIM_SYS/bus/mdev/devices/$u")" == */"${parents[$i]}/$u" ]]
                record_absent "$(printf '6d7a0002-0000-4000-8000-%012x' "$i")"
        done
        [ "$(ls "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" | wc -l)" -eq 256 ]
        [ "$(sim_mdevs | wc -l)" -eq 256 ]
}

# --- the rules file --------------------------------------------------------

# rules_test ACTION SYSDIR: runs `udevadm test` with only our rules file, in a
# private mount namespace where a tmpfs plays /sys and holds the fake device
# that the caller built under $BATS_TEST_TMPDIR/fakesys (SYSDIR relative to it).
rules_test() {
        local rules
        if [ -n "${MH_PREFIX:-}" ]; then
                rules=$(find "$MH_PREFIX" -name 60-mdev-hooks.rules | head -n1)
        else
                rules="$MH_BUILD_DIR/udev-rules/60-mdev-hooks.rules"
        fi
        cat > "$BATS_TEST_TMPDIR/ns.sh" <<EOF
set -e
mount -t tmpfs none /sys
cp -a "$BATS_TEST_TMPDIR/fakesys/." /sys/
mount -t tmpfs none /run/udev 2>/dev/null || { mkdir -p /run/udev && mount -t tmpfs none /run/udev; }
for d in /etc/udev/rules.d /lib/udev/rules.d /usr/lib/udev/rules.d /usr/local/lib/udev/rules.d; do
        [ -d "\$d" ] && mount -t tmpfs none "\$d"
done
mkdir -p /run/udev/rules.d
cp "$rules" /run/udev/rules.d/
SYSTEMD_DEVICE_VERIFY_SYSFS=0 SYSTEMD_LOG_LEVEL=debug udevadm test --action="$1" "/sys/$2" 2>&1
EOF
        run unshare -m --propagation private bash "$BATS_TEST_TMPDIR/ns.sh"
}

# fake_device DEVPATH SUBSYSTEM [KEY=VALUE...]: a device under fakesys with its
# subsystem link and uevent properties; ATTR:name=value makes an attribute.
fake_device() {
        local d="$BATS_TEST_TMPDIR/fakesys$1" sub=$2 kv
        shift 2
        mkdir -p "$d" "$BATS_TEST_TMPDIR/fakesys/bus/$sub/devices"
        ln -sfn "$(realpath -m --relative-to="$d" "$BATS_TEST_TMPDIR/fakesys/bus/$sub")" "$d/subsystem"
        : > "$d/uevent"
        for kv in "$@"; do
                case "$kv" in
                ATTR:*) kv=${kv#ATTR:}; printf '%s\n' "${kv#*=}" > "$d/${kv%%=*}" ;;
                *) printf '%s\n' "$kv" >> "$d/uevent" ;;
                esac
        done
}

# rules_ran ARGS: udevadm test's output says our rule runs the helper with
# ARGS. udev 252 (Debian 12) prints "run: '/.../mdev-hooks-udev ARGS'",
# udev 257 (Debian 13) "  RUN{program} : /.../mdev-hooks-udev ARGS".
rules_ran() {
        local line
        [[ "$output" == *"run: '/"*"/mdev-hooks-udev $1'"* ]] && return 0
        while IFS= read -r line; do
                [[ "$line" == *"RUN{program} : /"*"/mdev-hooks-udev $1" ]] && return 0
        done <<< "$output"
        return 1
}

rules_skip_unless_possible() {
        command -v udevadm > /dev/null || skip "udevadm is not installed"
        command -v unshare > /dev/null || skip "unshare is not installed"
        # Say why not, as unshare says it (in a container: seccomp or a missing
        # CAP_SYS_ADMIN, even as root).
        local why
        why=$(unshare -m true 2>&1) ||
                skip "cannot make a mount namespace here (uid $(id -u)): ${why:-unshare -m failed}"
}

@test "the rules run the helper with %k for a parent's registered and unregistered events" {
        rules_skip_unless_possible
        fake_device /devices/virtual/mtty/mtty mtty MDEV_STATE=registered
        rules_test change devices/virtual/mtty/mtty
        [ "$status" -eq 0 ]
        [[ "$output" == *"Reading rules file: /run/udev/rules.d/60-mdev-hooks.rules"* ]]
        # udevadm names a line of the file for every problem it finds in it
        # ("Invalid key/value pair", "has no matching label", ...).
        ! grep -E '^/run/udev/rules.d/60-mdev-hooks.rules:[0-9]+' <<< "$output" || false
        rules_ran "mtty"
        rm -rf "$BATS_TEST_TMPDIR/fakesys"
        fake_device /devices/pci0000:80/0000:80:01.0/0000:84:00.0 pci MDEV_STATE=unregistered
        rules_test change devices/pci0000:80/0000:80:01.0/0000:84:00.0
        rules_ran "0000:84:00.0"
}

@test "the rules run the helper for an mdev's add and remove, and not for other changes" {
        rules_skip_unless_possible
        fake_device "/devices/virtual/mtty/mtty/$U1" mdev
        rules_test add "devices/virtual/mtty/mtty/$U1"
        [ "$status" -eq 0 ]
        rules_ran "$U1"
        rules_test remove "devices/virtual/mtty/mtty/$U1"
        rules_ran "$U1"
        rules_test change "devices/virtual/mtty/mtty/$U1"
        [ "$status" -eq 0 ]
        [[ "$output" != *"mdev-hooks-udev"* ]]
}

@test "the rules run the helper for an SR-IOV PF's add and bind, not for other PCI devices" {
        rules_skip_unless_possible
        fake_device /devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0 pci ATTR:sriov_totalvfs=16 ATTR:sriov_numvfs=0
        fake_device /devices/pci0000:3a/0000:3a:00.0/0000:3b:00.4 pci
        fake_device /devices/pci0000:00/0000:00:1f.0 pci ATTR:sriov_totalvfs=0
        rules_test bind devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0
        [ "$status" -eq 0 ]
        rules_ran "0000:3b:00.0"
        rules_test add devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0
        rules_ran "0000:3b:00.0"
        rules_test bind devices/pci0000:3a/0000:3a:00.0/0000:3b:00.4
        [[ "$output" != *"mdev-hooks-udev"* ]]
        rules_test bind devices/pci0000:00/0000:00:1f.0
        [[ "$output" != *"mdev-hooks-udev"* ]]
        rules_test remove devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0
        [[ "$output" != *"mdev-hooks-udev"* ]]
}
