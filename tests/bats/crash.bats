#!/usr/bin/env bats
# Crash safety (doc/design.md §4.4): the qemu hook is killed with SIGKILL
# at each crash point (crash.h; MDEV_HOOKS_CRASH_AT, test builds only), then
# the next natural event runs: the same hook again, libvirt's release, the
# udev helper, or `reconcile --apply` against libvirt's test driver with a
# node file that says which guests run. After it, and after running it a
# second time:
#   - no guest that should hold an mdev has lost it,
#   - every mdev in sysfs is recorded, or is the one that existed before
#     (never touched by mdev-hooks), so nothing is left that nothing finds,
#   - the record parses (`mdev-hooks list` works, every file parses),
#   - reconcile finds nothing left to do,
#   - the second run changed nothing.

bats_require_minimum_version 1.5.0

load common
load ../sim/sim
load libvirt-node

T=nvidia-35
U1=aaaaaaaa-0000-4000-8000-000000000001 # web1's
U4=aaaaaaaa-0000-4000-8000-000000000004 # pair's first
U5=aaaaaaaa-0000-4000-8000-000000000005 # pair's second
# An mdev someone made by hand before any of this: mdev-hooks must never touch it.
UF=ffffffff-0000-4000-8000-00000000000f
PF=0000:87:00.0

setup() {
        needs_crashpoints
        sim_mount nvidia-timesliced
        config_write "[devices]
enabled_mdev_types = $T"
        sim_create $PF $T $UF
}

# hook GUEST OP SUBOP [EXTRA]: the qemu hook as libvirt runs it, with the
# guest's fixture XML on stdin.
hook() {
        "$MH_QEMU_HOOK" "$1" "$2" "$3" "${4:--}" < "$MH_GUESTS/$1.xml"
}

# crash POINT GUEST OP SUBOP: the hook, killed at POINT.
crash() {
        local point="$1"
        shift
        run env MDEV_HOOKS_CRASH_AT="$point" "$MH_QEMU_HOOK" "$1" "$2" "$3" - < "$MH_GUESTS/$1.xml"
        [ "$status" -eq 137 ] || { echo "the hook was not killed at $point (status $status): $output"; return 1; }
}

# udev_mdev_removed UUID PARENT: the udev helper's event for an mdev that went away.
udev_mdev_removed() {
        local pdev
        pdev="$(readlink -f "$SIM_SYS/bus/pci/devices/$2")"
        pdev="${pdev#"$SIM_SYS"}"
        env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION=remove SUBSYSTEM=mdev DEVPATH="$pdev/$1" \
                SEQNUM=1 "$MH_UDEV" "$1"
}

# assert_half_done_create UUID: the crash left the mdev created and its
# (intent) record written, nothing after that.
assert_half_done_create() {
        [ -n "$1" ] && [ -e "$SIM_SYS/bus/mdev/devices/$1" ] || { echo "no mdev '$1' after the crash"; return 1; }
        [ "$(record_get "$1" origin)" = created ] || { echo "no record of '$1' after the crash"; return 1; }
}

# assert_half_done_remove UUID: the crash left the mdev removed and its record.
assert_half_done_remove() {
        [ ! -e "$SIM_SYS/bus/mdev/devices/$1" ] || { echo "mdev $1 still there after the crash"; return 1; }
        [ -n "$(record_get "$1" state)" ] || { echo "no record of $1 after the crash"; return 1; }
}

# udev_mdev_added UUID: the udev helper's event for an mdev that appeared.
udev_mdev_added() {
        local dev
        dev="$(readlink -f "$SIM_SYS/bus/mdev/devices/$1")"
        env -i MDEV_HOOKS_ROOT="$MDEV_HOOKS_ROOT" ACTION=add SUBSYSTEM=mdev DEVPATH="${dev#"$SIM_SYS"}" \
                SEQNUM=1 "$MH_UDEV" "$1"
}

# mdevs_of GUEST: the mdev UUIDs in the guest's fixture XML.
mdevs_of() {
        sed -n "s#.*<address uuid='\(.*\)'/>.*#\1#p" "$MH_GUESTS/$1.xml"
}

# snapshot: the record and sysfs, without the time stamps a rewrite renews.
snapshot() {
        host_snapshot | grep -v '^since = '
}

# assert_sound URI RUNNING-GUEST...: the checks listed at the top, for the
# host as URI's node file describes it.
assert_sound() {
        local uri="$1" g u n d="$MDEV_HOOKS_ROOT/var/lib/mdev-hooks"
        shift
        # Nothing lost: every running guest holds each of its mdevs.
        for g in "$@"; do
                for u in $(mdevs_of "$g"); do
                        [ -e "$SIM_SYS/bus/mdev/devices/$u" ] || { echo "$g lost its mdev $u"; return 1; }
                        [ "$(record_get "$u" guest)" = "$g" ] || { echo "$u is not recorded for $g"; return 1; }
                        [ "$(record_get "$u" state)" = assigned ] || { echo "$u is not assigned"; return 1; }
                done
        done
        # Nothing nobody can find: each mdev is recorded or is the foreign one.
        for u in $(sim_mdevs); do
                [ "$u" = "$UF" ] && continue
                [ -f "$d/$u" ] || { echo "mdev $u exists without a record: leaked"; return 1; }
        done
        # The foreign mdev is untouched and unrecorded.
        [ -e "$SIM_SYS/bus/mdev/devices/$UF" ] || { echo "the foreign mdev $UF was removed"; return 1; }
        [ ! -e "$d/$UF" ] || { echo "the foreign mdev $UF was recorded"; return 1; }
        # The record parses: every file, and the CLI's list.
        for u in $(records); do
                n="$(grep -cE '^(uuid|parent|type|state|origin|guest|guest_uuid|boot_id|since|remove_pending) = ' "$d/$u")"
                [ "$n" -eq 10 ] || { echo "record $u is incomplete:"; cat "$d/$u"; return 1; }
        done
        run "$MH_CLI" list --json
        [ "$status" -eq 0 ] || { echo "mdev-hooks list failed: $output"; return 1; }
        python3 -c 'import json, sys; json.loads(sys.argv[1])' "$output" || { echo "list --json: $output"; return 1; }
        # Nothing left to fix (the foreign mdev is reported but does not count).
        run "$MH_CLI" reconcile --connect "$uri"
        [ "$status" -eq 0 ] || { echo "reconcile still finds something:"; echo "$output"; return 1; }
}

# --- prepare-after-create: the mdev is created, nothing after it done -------

@test "prepare killed after create: libvirt's release of the failed start removes the mdev" {
        crash prepare-after-create web1 prepare begin
        assert_half_done_create $U1
        run hook web1 release end failed
        [ "$status" -eq 0 ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1:off)"
        assert_sound "$uri"
        before="$(snapshot)"
        run hook web1 release end failed
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
}

@test "prepare killed after create: the udev helper's add event keeps the claim, and release removes it" {
        crash prepare-after-create web1 prepare begin
        assert_half_done_create $U1
        # The kernel announced the new mdev; its helper ran once the hook's lock was gone.
        run udev_mdev_added $U1
        [ "$status" -eq 0 ]
        [ "$(record_get $U1 guest)" = web1 ]
        [ "$(record_get $U1 origin)" = created ]
        before="$(snapshot)"
        run udev_mdev_added $U1
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
        run hook web1 release end failed
        [ "$status" -eq 0 ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        assert_sound "$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1:off)"
}

@test "prepare killed after create: the next start of the guest owns the mdev" {
        crash prepare-after-create web1 prepare begin
        assert_half_done_create $U1
        run hook web1 prepare begin
        [ "$status" -eq 0 ]
        [ "$(record_get $U1 origin)" = created ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1)"
        assert_sound "$uri" web1
        before="$(snapshot)"
        run hook web1 prepare begin
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
}

@test "prepare killed after create: reconcile --apply removes the mdev of the guest that did not start" {
        crash prepare-after-create web1 prepare begin
        assert_half_done_create $U1
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1:off)"
        run "$MH_CLI" reconcile --connect "$uri" --apply
        [ "$status" -eq 0 ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        assert_sound "$uri"
        before="$(snapshot)"
        run "$MH_CLI" reconcile --connect "$uri" --apply
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
}

# --- prepare-after-record: the first of two mdevs done ----------------------

@test "prepare killed after the first of two mdevs: libvirt's release removes it" {
        crash prepare-after-record pair prepare begin
        assert_half_done_create $U4
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U5" ]
        run hook pair release end failed
        [ "$status" -eq 0 ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U4" ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U5" ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" pair:off)"
        assert_sound "$uri"
        before="$(snapshot)"
        run hook pair release end failed
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
}

@test "prepare killed after the first of two mdevs: the next start gets both" {
        crash prepare-after-record pair prepare begin
        assert_half_done_create $U4
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U5" ]
        run hook pair prepare begin
        [ "$status" -eq 0 ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" pair)"
        assert_sound "$uri" pair
        [ "$(record_get $U4 origin)" = created ]
        [ "$(record_get $U5 origin)" = created ]
        before="$(snapshot)"
        run hook pair prepare begin
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
}

@test "prepare killed after the first of two mdevs: reconcile --apply removes it" {
        crash prepare-after-record pair prepare begin
        assert_half_done_create $U4
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U5" ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" pair:off)"
        run "$MH_CLI" reconcile --connect "$uri" --apply
        [ "$status" -eq 0 ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U4" ]
        assert_sound "$uri"
        before="$(snapshot)"
        run "$MH_CLI" reconcile --connect "$uri" --apply
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
}

# --- release-after-remove: the mdev removed, the record not yet changed -----

@test "release killed after remove: the next release finishes it" {
        run hook web1 prepare begin
        [ "$status" -eq 0 ]
        crash release-after-remove web1 release end
        assert_half_done_remove $U1
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        run hook web1 release end
        [ "$status" -eq 0 ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1:off)"
        assert_sound "$uri"
        [ -z "$(records)" ]
        before="$(snapshot)"
        run hook web1 release end
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
}

@test "release killed after remove: the udev helper's remove event leaves a record that agrees" {
        run hook web1 prepare begin
        [ "$status" -eq 0 ]
        parent="$(record_get $U1 parent)"
        crash release-after-remove web1 release end
        assert_half_done_remove $U1
        run udev_mdev_removed $U1 "$parent"
        [ "$status" -eq 0 ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1:off)"
        before="$(snapshot)"
        run udev_mdev_removed $U1 "$parent"
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
        # reconcile, which knows web1 is not running, has nothing to add.
        assert_sound "$uri"
}

@test "release killed after remove: reconcile --apply drops the record" {
        run hook web1 prepare begin
        [ "$status" -eq 0 ]
        crash release-after-remove web1 release end
        assert_half_done_remove $U1
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1:off)"
        run "$MH_CLI" reconcile --connect "$uri" --apply
        [ "$status" -eq 0 ]
        [ -z "$(records)" ]
        assert_sound "$uri"
        before="$(snapshot)"
        run "$MH_CLI" reconcile --connect "$uri" --apply
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
}

# --- migrate-after-create: the destination created an mdev for an arriving guest

@test "migrate killed after create: the retried migration reuses the claim, and its start owns it" {
        crash migrate-after-create web1 migrate begin
        assert_half_done_create "$(records)"
        run --separate-stderr hook web1 migrate begin
        [ "$status" -eq 0 ]
        [ "$(record_get $U1 state)" = incoming ]
        run hook web1 prepare begin
        [ "$status" -eq 0 ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1)"
        assert_sound "$uri" web1
        [ "$(record_get $U1 origin)" = created ]
        before="$(snapshot)"
        run hook web1 prepare begin
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
}

@test "migrate killed after create: reconcile --apply removes the claim once it is older than the bound" {
        crash migrate-after-create web1 migrate begin
        assert_half_done_create "$(records)"
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" plain)"
        # Within the bound the guest may still be arriving: left alone.
        before="$(snapshot)"
        run "$MH_CLI" reconcile --connect "$uri" --apply
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
        # As if the bound (10 minutes) had passed with no guest arriving.
        u="$(records)"
        [ -n "$u" ]
        sed -i "s/^since = .*/since = $(( $(date +%s) - 3600 ))/" "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$u"
        run "$MH_CLI" reconcile --connect "$uri" --apply
        [ "$status" -eq 0 ]
        [[ "$output" == *"incoming-expired"*": done"* ]]
        [ -z "$(records)" ]
        assert_sound "$uri"
        before="$(snapshot)"
        run "$MH_CLI" reconcile --connect "$uri" --apply
        [ "$status" -eq 0 ]
        [ "$(snapshot)" = "$before" ]
}

# --- prepare-before-sync: everything made, the lock let go, the record's
# directory not yet fsynced (hook.c, prepare_sync()) -------------------------

@test "prepare killed after it let the lock go, before its last fsync: the start is whole, and release removes it" {
        crash prepare-before-sync web1 prepare begin
        assert_half_done_create $U1
        [ "$(record_get $U1 state)" = assigned ]
        [ "$(record_get $U1 guest)" = web1 ]
        run hook web1 release end failed
        [ "$status" -eq 0 ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1:off)"
        assert_sound "$uri"
}

@test "prepare lets the lock go before its last fsync: another guest's prepare runs meanwhile" {
        config_write "[devices]
enabled_mdev_types = $T
[hooks]
lock_timeout = 1"
        export MDEV_HOOKS_PAUSE_FILE="$BATS_TEST_TMPDIR/pause"
        MDEV_HOOKS_PAUSE_AT=prepare-before-sync hook web1 prepare begin > "$BATS_TEST_TMPDIR/web1.out" 2>&1 &
        pid=$!
        for i in $(seq 600); do [ -e "$MDEV_HOOKS_PAUSE_FILE" ] && break; sleep 0.1; done
        [ -e "$MDEV_HOOKS_PAUSE_FILE" ]
        # web1's mdev and record are in place; the lock is free: pair's
        # prepare, which waits at most 1 s for it, goes through
        [ -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        [ "$(record_get $U1 state)" = assigned ]
        run hook pair prepare begin
        [ "$status" -eq 0 ]
        [ "$(record_get $U4 guest)" = pair ]
        [ "$(record_get $U5 guest)" = pair ]
        rm "$MDEV_HOOKS_PAUSE_FILE"
        wait "$pid"
        [ ! -s "$BATS_TEST_TMPDIR/web1.out" ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1 pair)"
        assert_sound "$uri" web1 pair
}

@test "prepare whose last fsync fails takes the lock back and undoes the start" {
        run env MDEV_HOOKS_FAIL_AT=prepare-sync "$MH_QEMU_HOOK" pair prepare begin - < "$MH_GUESTS/pair.xml"
        [ "$status" -eq 1 ]
        [[ "$output" == "mdev-hooks: pair: cannot sync '/var/lib/mdev-hooks': Input/output error" ]]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U4" ]
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U5" ]
        [ -z "$(record_get $U4 state)" ]
        [ -z "$(record_get $U5 state)" ]
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" pair:off)"
        assert_sound "$uri"
        # and the start works once the disk does
        run hook pair prepare begin
        [ "$status" -eq 0 ]
        [ "$(record_get $U4 state)" = assigned ]
}
