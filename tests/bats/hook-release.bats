#!/usr/bin/env bats
# The qemu hook's "release end <reason>" and "reconnect begin" on the
# simulator: what is removed, kept, forgotten, retried; never another guest's.

load hook-helpers

setup() {
        hook_setup nvidia-timesliced
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[hooks]
	release = ${RELEASE:-remove}
	EOF
}

keep_conf() {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-44

	[mdev_nvidia-44]
	device_addresses = $P84

	[hooks]
	release = keep
	EOF
}

@test "release removes the mdevs the hook created and their records" {
        run -0 prepare web1 "$U1" "$U2"
        run release web1
        [ "$status" -eq 0 ]
        mdev_absent "$U1"
        mdev_absent "$U2"
        [ -z "$(records)" ]
        [ "$(sim_available "$P84" nvidia-35)" -eq 16 ]
}

@test "release is idempotent" {
        run -0 prepare web1 "$U1"
        run -0 release web1
        run release web1
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ -z "$(records)" ]
}

@test "release frees only the released guest's mdevs" {
        run -0 prepare web1 "$U1"
        run -0 prepare web2 "$U2"
        run -0 release web1
        mdev_absent "$U1"
        mdev_exists "$U2"
        [ "$(record_get "$U2" guest)" = web2 ]
}

@test "a borrowed mdev is never removed" {
        sim_create "$P84" nvidia-35 "$U1"
        run -0 prepare web1 "$U1"
        [ "$(record_get "$U1" origin)" = borrowed ]
        run -0 release web1
        mdev_exists "$U1"
        [ -z "$(records)" ]
        # A second start borrows it again; still never removed.
        run -0 prepare web1 "$U1"
        run -0 release web1
        mdev_exists "$U1"
}

@test "release = keep keeps the mdev as free" {
        keep_conf
        run -0 prepare web1 "$U1,type=nvidia-44"
        run -0 release web1
        mdev_exists "$U1"
        [ "$(record_get "$U1" state)" = free ]
        [ -z "$(record_get "$U1" guest)" ]
        [ "$(record_get "$U1" origin)" = created ]
}

@test "a kept free mdev is reclaimed when a new one needs its room" {
        keep_conf
        run -0 prepare web1 "$U1,type=nvidia-44"
        run -0 release web1
        # nvidia-44 has one instance per GPU: the kept one blocks it.
        [ "$(sim_available "$P84" nvidia-44)" -eq 0 ]
        run prepare web2 "$U2,type=nvidia-44"
        [ "$status" -eq 0 ]
        mdev_absent "$U1"
        mdev_exists "$U2"
        [ "$(records)" = "$U2" ]
        [ "$(record_get "$U2" guest)" = web2 ]
}

@test "the same guest reuses its kept mdev" {
        keep_conf
        run -0 prepare web1 "$U1,type=nvidia-44"
        run -0 release web1
        sim_counters_reset
        run -0 prepare web1 "$U1,type=nvidia-44"
        [ "$(record_get "$U1" state)" = assigned ]
        [ "$(record_get "$U1" origin)" = created ]
        [ "$(sim_counter_total writes)" -eq 0 ]
}

@test "a busy remove is retried until it succeeds" {
        run -0 prepare web1 "$U1"
        sim_remove_busy 3 "$U1"
        run release web1
        [ "$status" -eq 0 ]
        mdev_absent "$U1"
        [ -z "$(records)" ]
}

@test "a remove that stays busy is left marked remove_pending and logged" {
        run -0 prepare web1 "$U1"
        sim_remove_busy 1000 "$U1"
        run release web1
        [ "$status" -eq 0 ]
        [[ "$output" == "mdev-hooks: web1: "*"$U1"*"remove_pending"* ]]
        mdev_exists "$U1"
        [ "$(record_get "$U1" remove_pending)" = yes ]
        [ "$(record_get "$U1" state)" = free ]
        [ -z "$(record_get "$U1" guest)" ]
}

@test "an mdev left remove_pending is removed when its room is needed" {
        keep_conf
        sed -i 's/release = keep/release = remove/' "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run -0 prepare web1 "$U1,type=nvidia-44"
        sim_remove_busy 1000 "$U1"
        run -0 release web1
        [ "$(record_get "$U1" remove_pending)" = yes ]
        sim_faults_reset
        # nvidia-44 has one instance on the GPU: U2 needs U1's room.
        run prepare web2 "$U2,type=nvidia-44"
        [ "$status" -eq 0 ]
        mdev_absent "$U1"
        mdev_exists "$U2"
        [ "$(records)" = "$U2" ]
}

@test "release with malformed XML still frees the guest's mdevs by the record" {
        run -0 prepare web1 "$U1"
        head -n -3 "$BATS_TEST_TMPDIR/web1.xml" > "$BATS_TEST_TMPDIR/broken.xml"
        run hook web1 release end - < "$BATS_TEST_TMPDIR/broken.xml"
        [ "$status" -eq 0 ]
        [[ "$output" == "mdev-hooks: web1: "*"releasing by the record alone"* ]]
        mdev_absent "$U1"
        [ -z "$(records)" ]
}

@test "release frees an mdev that was hot-unplugged from the running guest" {
        run -0 prepare web1 "$U1" "$U2"
        # virsh detach-device of U2: no hook runs; the XML at stop lacks it.
        domxml web1 "$U1" > "$BATS_TEST_TMPDIR/web1.xml"
        run -0 release web1
        mdev_absent "$U1"
        mdev_absent "$U2"
        [ -z "$(records)" ]
        # Also when no mdev is left in the XML at all.
        run -0 prepare web2 "$U3"
        domxml web2 > "$BATS_TEST_TMPDIR/web2.xml"
        run -0 release web2
        mdev_absent "$U3"
        [ -z "$(records)" ]
        # The guests' index entries went with their records: only the file
        # the entries are links to is left.
        [ "$(ls -A "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks.by-guest")" = "@entry" ]
}

@test "release forgets a record whose mdev is already gone" {
        run -0 prepare web1 "$U1"
        sim_remove "$U1"
        run release web1
        [ "$status" -eq 0 ]
        [ -z "$(records)" ]
}

@test "release never removes an mdev held by another guest" {
        run -0 prepare web1 "$U1"
        run prepare web2 "$U1"
        [ "$status" -eq 1 ]
        for reason in failed - shutdown; do
                run -0 release web2 "$reason"
        done
        mdev_exists "$U1"
        [ "$(record_get "$U1" guest)" = web1 ]
}

@test "release with a config that has errors exits 0 and logs why" {
        run -0 prepare web1 "$U1"
        printf '[devices]\nbogus line\n' | config_write
        run release web1
        [ "$status" -eq 0 ]
        [[ "$output" == "mdev-hooks: web1: "*"config"* ]]
}

@test "reconnect re-asserts the running guest's claims" {
        sim_create "$P84" nvidia-35 "$U1"
        domxml web1 "$U1" > "$BATS_TEST_TMPDIR/web1.xml"
        run hook web1 reconnect begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" guest)" = web1 ]
        [ "$(record_get "$U1" state)" = assigned ]
        [ "$(record_get "$U1" origin)" = borrowed ]
}

@test "reconnect never fails" {
        # An mdev that is missing, one of another guest, a type mismatch, bad XML.
        run -0 prepare web2 "$U2"
        sim_create "$P85" nvidia-36 "$U3"
        domxml web1 "$U1" "$U2" "$U3,type=nvidia-35" > "$BATS_TEST_TMPDIR/web1.xml"
        run hook web1 reconnect begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 0 ]
        [[ "$output" == *"$U1"* ]]
        [ "$(record_get "$U2" guest)" = web2 ]
        run hook web1 reconnect begin - <<< "<domain><name>web1</name><devices><hostdev type='mdev'>"
        [ "$status" -eq 0 ]
        printf '[devices]\nbogus line\n' | config_write
        run hook web1 reconnect begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 0 ]
}

# Defect: a prepare made room for one of the guest's mdevs by removing
# another of its own kept mdevs, then claimed that one from what it had read
# before, and exited 0 with the mdev gone.
keep_two_conf() {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-44

	[mdev_nvidia-44]
	device_addresses = $P84, $P85

	[hooks]
	release = keep
	EOF
}

# Guest web1 has U1 (on 84) and U2 (on 85), both kept free after it stopped;
# web2 then takes 84's only instance, reclaiming U1.
keep_two_setup() {
        keep_two_conf
        run -0 prepare web1 "$U1,type=nvidia-44" "$U2,type=nvidia-44"
        [ "$(mdev_parent "$U1")" = "$P84" ]
        [ "$(mdev_parent "$U2")" = "$P85" ]
        run -0 release web1
        [ "$(record_get "$U1" state)" = free ]
        [ "$(record_get "$U2" state)" = free ]
        run -0 prepare web2 "$U3,type=nvidia-44"
        mdev_absent "$U1"
        [ "$(mdev_parent "$U3")" = "$P84" ]
        mdev_exists "$U2"
}

# After web1's new start: either it holds both, existing and recorded as its
# own, or it failed and lost nothing (U2 still there and kept free, web2's
# U3 untouched).
assert_kept_not_lost() {
        mdev_exists "$U3"
        [ "$(record_get "$U3" guest)" = web2 ]
        mdev_exists "$U2"
        if [ "$status" -eq 0 ]; then
                mdev_exists "$U1"
                [ "$(record_get "$U1" guest)" = web1 ]
                [ "$(record_get "$U2" guest)" = web1 ]
                [ "$(record_get "$U1" state)" = "${1:-assigned}" ]
                [ "$(record_get "$U2" state)" = "${1:-assigned}" ]
        else
                [ "$(record_get "$U2" state)" = free ]
                [ "$(record_get "$U2" origin)" = created ]
                mdev_absent "$U1"
        fi
        assert_record_matches_sysfs
}

@test "release = keep: a prepare never removes one of the guest's own kept mdevs to make room for another" {
        keep_two_setup
        # U1 must be created and every parent is full: the kept U2 is the
        # guest's own, and must not be the one removed.
        run prepare web1 "$U1,type=nvidia-44" "$U2,type=nvidia-44"
        echo "$output"
        assert_kept_not_lost
        [ "$status" -eq 1 ]
        [[ "$output" == "mdev-hooks: web1: no capacity for nvidia-44"* ]]
}

@test "release = keep: a prepare never removes the guest's own kept mdev, whatever the hostdev order" {
        keep_two_setup
        run prepare web1 "$U2,type=nvidia-44" "$U1,type=nvidia-44"
        echo "$output"
        assert_kept_not_lost
        [ "$status" -eq 1 ]
}

# Defect: release exited 0 without a word when a record of the guest did not
# parse, and the mdev stayed for good.
@test "release reports a record it cannot read, naming the file and reconcile" {
        run -0 prepare web1 "$U1" "$U2"
        head -n 3 "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$U1" > "$BATS_TEST_TMPDIR/cut"
        cat "$BATS_TEST_TMPDIR/cut" > "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$U1"   # truncated
        printf 'garbage\001\n' > "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$U2"          # garbage
        run --separate-stderr release web1
        echo "$stderr"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        for u in "$U1" "$U2"; do
                grep -qx "mdev-hooks: web1: cannot read the record of mdev $u: '/var/lib/mdev-hooks/$u' line [0-9]*: .*; the mdev, if it exists, is left in place: run 'mdev-hooks reconcile' to report it and 'mdev-hooks reconcile --apply' to repair it" <<< "$stderr"
                # what it kept cannot be known: left in place
                mdev_exists "$u"
        done
}

@test "release reports an unreadable record that only the XML names" {
        run -0 prepare web1 "$U1"
        printf 'garbage\n' > "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$U1"
        rm -r "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks.by-guest"
        run --separate-stderr release web1
        echo "$stderr"
        [ "$status" -eq 0 ]
        [[ "$stderr" == *"cannot read the record of mdev $U1: '/var/lib/mdev-hooks/$U1' line 1: "*"mdev-hooks reconcile"* ]]
        mdev_exists "$U1"
}
