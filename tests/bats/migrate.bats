#!/usr/bin/env bats
# Live migration and restore (doc/design.md §1): "migrate begin -" and "restore begin -"
# on the destination, run exactly as libvirt runs them (the incoming XML on
# stdin, the replacement XML on stdout, nothing printed when unchanged).
# Two simulator mounts and two roots play the source host A and the
# destination host B.

load hook-helpers
load libvirt-node

setup() {
        A="$BATS_TEST_TMPDIR/a"
        B="$BATS_TEST_TMPDIR/b"
        sim_mount nvidia-timesliced "$A"
        sim_mount nvidia-timesliced "$B"
        T="$BATS_TEST_TMPDIR"
}

# conf_on ROOT: the config of that host from stdin.
conf_on() {
        sim_use "$1"
        config_write
}

one_type_conf() {
        conf_on "$1" <<-EOF
	[devices]
	enabled_mdev_types = ${2:-nvidia-35}
	EOF
}

# The rest of a successful migration: prepare on B with the XML that migrate
# produced, then the source's release (libvirt >= 10.5 says "migrated").
finish_migration() {
        sim_use "$B"
        run --separate-stderr hook "$1" prepare begin - < "$T/$1.b.xml"
        [ "$status" -eq 0 ]
        sim_use "$A"
        run --separate-stderr hook "$1" release end migrated < "$T/$1.xml"
        [ "$status" -eq 0 ]
}

# guest_records GUEST: the UUIDs the current root's record gives GUEST.
guest_records() {
        local u
        for u in $(records); do
                [ "$(record_get "$u" guest)" = "$1" ] && echo "$u"
        done
        return 0
}

# A holds nothing of the guest; B holds exactly the guest's mdevs (those in
# $T/NAME.b.xml), assigned, existing, of the right type.
assert_moved() {
        local name="$1" type="$2" u
        sim_use "$A"
        [ -z "$(guest_records "$name")" ]
        [ -z "$(sim_mdevs)" ]
        assert_record_matches_sysfs
        sim_use "$B"
        [ "$(guest_records "$name")" = "$(xml_uuids "$T/$name.b.xml" | sort)" ]
        for u in $(xml_uuids "$T/$name.b.xml"); do
                mdev_exists "$u"
                [ "$(mdev_type "$u")" = "$type" ]
                [ "$(record_get "$u" state)" = assigned ]
        done
        assert_record_matches_sysfs
}

# The rewritten XML is the incoming one byte for byte except for the UUIDs
# given as OLD NEW pairs.
assert_only_uuids_changed() {
        local in="$1" out="$2" masked_in masked_out
        shift 2
        masked_in="$(cat "$in")"
        masked_out="$(cat "$out")"
        while [ $# -gt 0 ]; do
                masked_in="${masked_in//$1/UUID-$1}"
                masked_out="${masked_out//$2/UUID-$1}"
                shift 2
        done
        diff -u <(printf '%s\n' "$masked_in") <(printf '%s\n' "$masked_out")
}

@test "migrate keeps the UUID when it is free on the destination" {
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        mdev_exists "$U1"
        [ "$(mdev_type "$U1")" = nvidia-35 ]
        [ "$(record_get "$U1" guest)" = web1 ]
        [ "$(record_get "$U1" state)" = incoming ]
        [ "$(record_get "$U1" origin)" = created ]

        finish_migration web1
        assert_moved web1 nvidia-35
}

@test "migrate rewrites the UUID when it is taken on the destination" {
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$B"
        run prepare other "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ -n "$output" ]
        new="$(xml_uuids "$T/web1.b.xml")"
        [ "$new" != "$U1" ]
        mdev_exists "$new"
        [ "$(mdev_type "$new")" = nvidia-35 ]
        [ "$(record_get "$new" guest)" = web1 ]
        [ "$(record_get "$new" state)" = incoming ]
        # the metadata entry follows the hostdev, and nothing else changed
        grep -q "<mh:mdev uuid=\"$new\" type=\"nvidia-35\"/>" "$T/web1.b.xml"
        assert_only_uuids_changed "$T/web1.xml" "$T/web1.b.xml" "$U1" "$new"
        # the other guest's mdev is untouched
        [ "$(record_get "$U1" guest)" = other ]
        [ "$(record_get "$U1" state)" = assigned ]

        finish_migration web1
        assert_moved web1 nvidia-35
        [ "$(record_get "$U1" guest)" = other ]
}

@test "a new UUID comes from proc/sys/kernel/random/uuid under the root" {
        one_type_conf "$A"
        one_type_conf "$B"
        fresh=0f0e0d0c-0b0a-4908-8706-050403020100
        printf '%s\n' "$fresh" > "$B/proc/sys/kernel/random/uuid"
        sim_use "$B"
        run prepare other "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"

        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ "$(xml_uuids "$T/web1.b.xml")" = "$fresh" ]
        [ "$(record_get "$fresh" state)" = incoming ]
}

@test "migrate rewrites to a free mdev kept on the destination instead of creating one" {
        one_type_conf "$A"
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[hooks]
	release = keep
	EOF
        sim_use "$B"
        run prepare old "$U3,type=nvidia-35"
        [ "$status" -eq 0 ]
        run release old
        [ "$(record_get "$U3" state)" = free ]
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ "$(xml_uuids "$T/web1.b.xml")" = "$U3" ]
        [ "$(sim_mdevs)" = "$U3" ]
        run ! mdev_exists "$U1"
        [ "$(record_get "$U3" guest)" = web1 ]
        [ "$(record_get "$U3" state)" = incoming ]
        [ "$(record_get "$U3" origin)" = created ]
        assert_only_uuids_changed "$T/web1.xml" "$T/web1.b.xml" "$U1" "$U3"

        finish_migration web1
        assert_moved web1 nvidia-35
}

@test "migrate of two mdevs takes two different kept mdevs" {
        one_type_conf "$A"
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[hooks]
	release = keep
	EOF
        sim_use "$B"
        run prepare old "$U3,type=nvidia-35" "$U4,type=nvidia-35"
        [ "$status" -eq 0 ]
        run release old
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ "$(xml_uuids "$T/web1.b.xml" | sort)" = "$(printf '%s\n' "$U3" "$U4")" ]
        [ "$(sim_mdevs)" = "$(printf '%s\n' "$U3" "$U4")" ]
        [ "$(record_get "$U3" state)" = incoming ]
        [ "$(record_get "$U4" state)" = incoming ]

        finish_migration web1
        assert_moved web1 nvidia-35
}

@test "a retried migrate reuses the mdev an earlier attempt made under a new UUID" {
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$B"
        run prepare other "$U1,type=nvidia-35"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        first="$(xml_uuids "$T/web1.b.xml")"
        [ "$first" != "$U1" ]
        # libvirt retries before any release ran on B (the first attempt's
        # migrate was killed, or its release got lost)
        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ "$(xml_uuids "$T/web1.b.xml")" = "$first" ]
        [ "$(sim_mdevs | wc -l)" -eq 2 ]
        [ "$(guest_records web1)" = "$first" ]
}

@test "migrate reuses an mdev with the same UUID that exists on the destination" {
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$B"
        sim_create "$P85" nvidia-35 "$U1"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(sim_mdevs)" = "$U1" ]
        [ "$(mdev_parent "$U1")" = "$P85" ]
        [ "$(record_get "$U1" state)" = incoming ]
        # mdev-hooks did not make it, so it will never remove it
        [ "$(record_get "$U1" origin)" = borrowed ]
}

@test "migrate does not take an mdev with the same UUID but another type" {
        one_type_conf "$A"
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35, nvidia-36

	[mdev_nvidia-36]
	device_addresses = $P87
	EOF
        sim_use "$B"
        sim_create "$P87" nvidia-36 "$U1"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        new="$(xml_uuids "$T/web1.b.xml")"
        [ "$new" != "$U1" ]
        [ "$(mdev_type "$new")" = nvidia-35 ]
        [ "$(mdev_type "$U1")" = nvidia-36 ]
        [ -z "$(record_get "$U1" guest)" ]
}

@test "migrate with a class in the metadata takes any enabled type of that class" {
        conf_on "$A" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	mdev_class = CUSTOM_SMALL
	EOF
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-36

	[mdev_nvidia-36]
	mdev_class = CUSTOM_SMALL
	EOF
        sim_use "$A"
        run prepare web1 "$U1,class=CUSTOM_SMALL"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(mdev_type "$U1")" = nvidia-36 ]
        finish_migration web1
        assert_moved web1 nvidia-36
}

@test "migrate does not take an mdev with the same UUID whose remove is pending" {
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$B"
        sim_create "$P84" nvidia-35 "$U1"
        mkdir -p "$B/var/lib/mdev-hooks"
        cat > "$B/var/lib/mdev-hooks/$U1" <<-EOF
	[mdev]
	uuid = $U1
	parent = $P84
	type = nvidia-35
	state = free
	origin = created
	guest =
	guest_uuid =
	boot_id = $(cat "$B/proc/sys/kernel/random/boot_id")
	since = $(date +%s)
	remove_pending = yes
	EOF
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        new="$(xml_uuids "$T/web1.b.xml")"
        [ "$new" != "$U1" ]
        [ "$(record_get "$new" state)" = incoming ]
        [ "$(record_get "$U1" remove_pending)" = yes ]
        [ -z "$(record_get "$U1" guest)" ]
}

@test "migrate refuses a type that is not enabled on the destination and creates nothing" {
        one_type_conf "$A"
        one_type_conf "$B" nvidia-36
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -ne 0 ]
        [ -z "$output" ]
        [[ "$stderr" == *"web1: type nvidia-35 is not enabled here; enabled: nvidia-36"* ]]
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
}

@test "migrate refuses before any create when only the second mdev's type is not enabled" {
        conf_on "$A" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35, nvidia-36

	[mdev_nvidia-35]
	device_addresses = $P84

	[mdev_nvidia-36]
	device_addresses = $P85
	EOF
        one_type_conf "$B"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-36"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -ne 0 ]
        [[ "$stderr" == *"type nvidia-36 is not enabled here; enabled: nvidia-35"* ]]
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
}

@test "migrate refuses when the destination is full and names its parents" {
        conf_on "$A" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-45
	EOF
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-45

	[mdev_nvidia-45]
	device_addresses = $P84, $P85
	EOF
        sim_use "$B"
        run prepare other1 "$U3,type=nvidia-45"
        [ "$status" -eq 0 ]
        run prepare other2 "$U4,type=nvidia-45"
        [ "$status" -eq 0 ]
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-45"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -ne 0 ]
        [ -z "$output" ]
        [[ "$stderr" == *"no capacity for nvidia-45"* ]]
        [[ "$stderr" == *"$P84"* ]]
        [[ "$stderr" == *"$P85"* ]]
        [ "$(sim_mdevs)" = "$(printf '%s\n' "$U3" "$U4")" ]
        [ -z "$(guest_records web1)" ]
        assert_record_matches_sysfs
}

@test "release on the destination after a failed migration removes what migrate made" {
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$B"
        run prepare other "$U1,type=nvidia-35"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ "$(guest_records web1 | wc -l)" -eq 2 ]

        # The migration fails: libvirt runs stopped and release on B (libvirt
        # 11 as recorded in tests/vm/libvirt11-hook-transcript.md).
        run --separate-stderr hook web1 release end failed < "$T/web1.b.xml"
        [ "$status" -eq 0 ]
        [ -z "$(guest_records web1)" ]
        [ "$(sim_mdevs)" = "$U1" ]
        [ "$(record_get "$U1" guest)" = other ]
        assert_record_matches_sysfs
        # the source still runs the guest
        sim_use "$A"
        [ "$(guest_records web1)" = "$(printf '%s\n' "$U1" "$U2")" ]
}

@test "migrate of a guest with two mdevs undoes the first when the second cannot be placed" {
        conf_on "$A" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-45
	EOF
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-45

	[mdev_nvidia-45]
	device_addresses = $P84
	EOF
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-45" "$U2,type=nvidia-45"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -ne 0 ]
        [ -z "$output" ]
        [[ "$stderr" == *"no capacity for nvidia-45"* ]]
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
        [ "$(sim_available "$P84" nvidia-45)" -eq 1 ]
}

# migrate plans its creations and writes their records together
# (alloc_plan()): the places must be the ones that creating them one by one
# would give, each plan counting the ones before it.
@test "migrate of four mdevs places them as one by one would: spread" {
        one_type_conf "$A"
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[hooks]
	placement = spread
	EOF
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-35" "$U3,type=nvidia-35" "$U4,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        # One on each parent, in address order.
        [ "$(mdev_parent "$U1")" = "$P84" ]
        [ "$(mdev_parent "$U2")" = "$P85" ]
        [ "$(mdev_parent "$U3")" = "$P86" ]
        [ "$(mdev_parent "$U4")" = "$P87" ]
        assert_record_matches_sysfs
        [ "$(ls "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/" | grep -c tmp)" -eq 0 ]
}

@test "migrate of four mdevs places them as one by one would: pack" {
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$B"
        sim_create "$P85" nvidia-35 "$U4"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-35" "$U3,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        # All with the one B already has (not mdev-hooks': no record).
        for u in "$U1" "$U2" "$U3"; do
                [ "$(mdev_parent "$u")" = "$P85" ]
                [ "$(record_get "$u" parent)" = "$P85" ]
                [ "$(record_get "$u" state)" = incoming ]
        done
}

@test "a planned create that its parent refuses goes on to the next candidate" {
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-35"
        [ "$status" -eq 0 ]

        # Both are planned on 84:00.0; its first two creates fail as a full
        # parent does: the plan of U1, then U1's try there from the start.
        sim_use "$B"
        sim_create_fail EUSERS "$P84" 2
        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(mdev_parent "$U1")" = "$P85" ]
        [ "$(record_get "$U1" parent)" = "$P85" ]
        [ "$(mdev_parent "$U2")" = "$P84" ]
        [ "$(record_get "$U2" state)" = incoming ]
        assert_record_matches_sysfs
        finish_migration web1
        assert_moved web1 nvidia-35
}

@test "migrate counts the mdevs it plans against max_instances" {
        one_type_conf "$A"
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	max_instances = 2
	EOF
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-35" "$U3,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -ne 0 ]
        [ -z "$output" ]
        [[ "$stderr" == *"no capacity for nvidia-35"*"over max_instances"* ]]
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
}

# migrate refuses a config with errors as the other operations do: with its
# message, before any change.
@test "migrate with a config that has errors refuses with the config's message and creates nothing" {
        one_type_conf "$A"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35
	bogus_key = 1
	EOF
        migrate_to_b web1
        [ "$status" -eq 1 ]
        [ -z "$output" ]
        [[ "$stderr" == "mdev-hooks: web1: the config has errors, fix it first (mdev-hooks check-config): "*"bogus_key"* ]]
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
}

@test "a failed migrate gives back the kept mdev it had claimed" {
        conf_on "$A" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-45
	EOF
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-45

	[mdev_nvidia-45]
	device_addresses = $P84

	[hooks]
	release = keep
	EOF
        sim_use "$B"
        run prepare old "$U3,type=nvidia-45"
        run release old
        [ "$(record_get "$U3" state)" = free ]
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-45" "$U2,type=nvidia-45"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -ne 0 ]
        [ "$(sim_mdevs)" = "$U3" ]
        [ "$(record_get "$U3" state)" = free ]
        [ -z "$(record_get "$U3" guest)" ]
        [ -z "$(guest_records web1)" ]
}

@test "migrate of a guest with two mdevs rewrites only the one that is taken" {
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$B"
        run prepare other "$U2,type=nvidia-35"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-35"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        mapfile -t got < <(xml_uuids "$T/web1.b.xml")
        [ "${got[0]}" = "$U1" ]
        [ "${got[1]}" != "$U2" ]
        assert_only_uuids_changed "$T/web1.xml" "$T/web1.b.xml" "$U2" "${got[1]}"

        finish_migration web1
        assert_moved web1 nvidia-35
        sim_use "$B"
        [ "$(record_get "$U2" guest)" = other ]
}

@test "migrate of a domain without mdevs prints nothing and exits 0" {
        one_type_conf "$B"
        domxml plain > "$T/plain.xml"
        migrate_to_b plain
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ -z "$stderr" ]
        [ -z "$(records)" ]
}

@test "migrate without metadata uses the only enabled type" {
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$A"
        run prepare web1 "$U1"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ "$(mdev_type "$U1")" = nvidia-35 ]
}

@test "migrate without metadata refuses when the destination enables several types" {
        one_type_conf "$A"
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35, nvidia-36

	[mdev_nvidia-36]
	device_addresses = $P87
	EOF
        sim_use "$A"
        run prepare web1 "$U1"
        [ "$status" -eq 0 ]

        migrate_to_b web1
        [ "$status" -ne 0 ]
        [[ "$stderr" == *"$U1 has no type in the domain metadata"* ]]
        [[ "$stderr" == *"<mh:mdev uuid=\"$U1\" type=\"...\"/>"* ]]
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
}

@test "migrate refuses hostile XML and writes nothing" {
        one_type_conf "$B"
        sim_use "$B"
        for f in billion-laughs external-entity dup-uuid meta-type-slash meta-parent-slash bad-hostdev-uuid huge; do
                case "$f" in
                bad-hostdev-uuid)
                        domxml evil "../../../etc/passwd" > "$T/$f.xml" ;;
                huge)
                        # over the 8 MiB limit
                        { domxml evil "$U1,type=nvidia-35"; head -c 9000000 /dev/zero | tr '\0' ' '; } > "$T/$f.xml" ;;
                *)
                        cp "$MH_DATA/domxml/$f.xml" "$T/$f.xml" ;;
                esac
                run --separate-stderr hook evil migrate begin - < "$T/$f.xml"
                echo "$f: $status $stderr"
                [ "$status" -ne 0 ]
                [ -z "$output" ]
                [[ "$stderr" == "mdev-hooks: evil: "* ]]
                [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
        done
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
        run ! grep -rq root: "$B/var/lib/mdev-hooks"
}

@test "metadata in another namespace is not trusted by migrate" {
        one_type_conf "$B" nvidia-36
        sim_use "$B"
        cp "$MH_DATA/domxml/wrong-namespace.xml" "$T/ns.xml"
        # nvidia-99 in a foreign namespace must not be taken for the type:
        # without our metadata the only enabled type applies.
        run --separate-stderr hook ns migrate begin - < "$T/ns.xml"
        [ "$status" -eq 0 ]
        u="$(xml_uuids "$T/ns.xml")"
        [ "$(mdev_type "$u")" = nvidia-36 ]
}

@test "restore recreates a saved guest's mdev with its own UUID" {
        one_type_conf "$A"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        # virsh save stops the guest: release removes its mdev
        run release web1 saved
        run ! mdev_exists "$U1"

        run --separate-stderr hook web1 restore begin - < "$T/web1.xml"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        mdev_exists "$U1"
        [ "$(record_get "$U1" state)" = incoming ]
        run --separate-stderr hook web1 prepare begin - < "$T/web1.xml"
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = assigned ]
}

@test "restore on a host where the UUID is taken rewrites it" {
        one_type_conf "$A"
        sim_use "$A"
        run prepare web1 "$U1,type=nvidia-35"
        run release web1 saved
        run prepare other "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]

        run --separate-stderr hook web1 restore begin - < "$T/web1.xml"
        [ "$status" -eq 0 ]
        [ -n "$output" ]
        printf '%s\n' "$output" > "$T/web1.r.xml"
        assert_prepare_accepts "$T/web1.r.xml" "$T/web1.xml"
        new="$(xml_uuids "$T/web1.r.xml")"
        [ "$new" != "$U1" ]
        [ "$(record_get "$new" guest)" = web1 ]
        [ "$(record_get "$U1" guest)" = other ]
}

# crash_in_migrate_on_b: web1 (U1) runs on A; its migrate hook on B dies
# right after creating the mdev. libvirt 11 then runs nothing more on B for
# it: no prepare, no release (tests/vm/libvirt11-hook-transcript.md), and
# the guest keeps running on A. B is left with the created mdev under an
# incoming claim.
crash_in_migrate_on_b() {
        needs_crashpoints
        one_type_conf "$A"
        one_type_conf "$B"
        sim_use "$A"
        run -0 prepare web1 "$U1,type=nvidia-35"
        sim_use "$B"
        MDEV_HOOKS_CRASH_AT=migrate-after-create run --separate-stderr hook web1 migrate begin - < "$T/web1.xml"
        [ "$status" -ne 0 ]
        mdev_exists "$U1"
        [ "$(records)" = "$U1" ]
        [ "$(record_get "$U1" guest)" = web1 ]
        [ "$(record_get "$U1" state)" = incoming ]
        [ "$(record_get "$U1" origin)" = created ]
        sim_use "$A"
        [ "$(guest_records web1)" = "$U1" ]
}

@test "a crash right after migrate's create leaves a claim that the next migration to B takes" {
        crash_in_migrate_on_b
        # The migration is tried again: B's migrate takes the claim it left,
        # creates nothing more, and the migration completes.
        migrate_to_b web1
        [ "$status" -eq 0 ]
        [ "$(xml_uuids "$T/web1.b.xml")" = "$U1" ]
        [ "$(sim_mdevs)" = "$U1" ]
        finish_migration web1
        assert_moved web1 nvidia-35
}

@test "a crash right after migrate's create leaves a claim that reconcile removes once it expired" {
        crash_in_migrate_on_b
        # The guest never comes to B. reconcile on B, where web1 does not
        # run, leaves the recent claim alone (the guest may be arriving) ...
        sim_use "$B"
        uri="$(node_xml "$T/node-b.xml" plain)"
        run -0 "$MH_CLI" reconcile --connect "$uri" --apply
        mdev_exists "$U1"
        [ "$(record_get "$U1" state)" = incoming ]
        # ... and removes the mdev and its record once the claim is older than
        # the bound (ten minutes; the record is aged by hand).
        sed -i "s/^since = .*/since = $(( $(date +%s) - 3600 ))/" "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$U1"
        run -0 "$MH_CLI" reconcile --connect "$uri" --apply
        [[ "$output" == "$U1 incoming-expired: "*"-> remove the mdev and its record: done" ]]
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
        assert_record_matches_sysfs
        # A still runs the guest with its mdev.
        sim_use "$A"
        [ "$(guest_records web1)" = "$U1" ]
        mdev_exists "$U1"
}

# Defect (prepare's twin): making room for one hostdev must never remove a
# free mdev that the same call claims for another. On B (release = keep),
# web1 left U1 (on 84) and U2 (on 85) kept free; web2 then took 84's only
# instance, reclaiming U1. web1 now comes back with U1 and U2 (OP: migrate
# from A, or restore on B), in the given hostdev order.
kept_own_back() {
        local op="$1"
        shift
        one_type_conf "$A" nvidia-44
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-44

	[mdev_nvidia-44]
	device_addresses = $P84, $P85

	[hooks]
	release = keep
	EOF
        sim_use "$B"
        run -0 prepare web1 "$U1,type=nvidia-44" "$U2,type=nvidia-44"
        [ "$(mdev_parent "$U1")" = "$P84" ]
        [ "$(mdev_parent "$U2")" = "$P85" ]
        run -0 release web1 migrated
        run -0 prepare web2 "$U3,type=nvidia-44"
        mdev_absent "$U1"
        domxml web1 "$@" > "$T/web1.xml"

        migrate_to_b web1 "$op"
        echo "$stderr"
        # Either both are web1's now, or nothing was lost: U2 still there
        # and kept free, web2's U3 untouched.
        mdev_exists "$U3"
        [ "$(record_get "$U3" guest)" = web2 ]
        mdev_exists "$U2"
        if [ "$status" -eq 0 ]; then
                for u in $(xml_uuids "$T/web1.b.xml"); do
                        mdev_exists "$u"
                        [ "$(record_get "$u" guest)" = web1 ]
                        [ "$(record_get "$u" state)" = incoming ]
                done
        else
                [ "$(record_get "$U2" state)" = free ]
                [ -z "$(guest_records web1)" ]
        fi
        assert_record_matches_sysfs
}

@test "release = keep: migrate never removes a kept mdev it claims for another hostdev of the guest" {
        kept_own_back migrate "$U1,type=nvidia-44" "$U2,type=nvidia-44"
        [ "$status" -ne 0 ]
}

@test "release = keep: restore never removes a kept mdev it claims for another hostdev of the guest" {
        kept_own_back restore "$U2,type=nvidia-44" "$U1,type=nvidia-44"
        [ "$status" -ne 0 ]
}

# Defect: a metadata entry left over for a UUID that no hostdev uses any more
# (hot-unplugged), and that UUID kept free on the destination. migrate chose
# it for another hostdev and printed two <mh:mdev> entries for it, which the
# next prepare refused.
@test "migrate never rewrites a hostdev to a UUID that a leftover metadata entry names" {
        one_type_conf "$A"
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[hooks]
	release = keep
	EOF
        sim_use "$B"
        run -0 prepare old "$U3,type=nvidia-35"
        run -0 release old
        [ "$(record_get "$U3" state)" = free ]
        sim_use "$B"
        run -0 prepare other "$U1,type=nvidia-35"
        # web1 on A: U1, plus a metadata entry for U3 whose hostdev is gone
        domxml web1 "$U1,type=nvidia-35" |
                sed "s|</mh:mdevs>|  <mh:mdev uuid=\"$U3\" type=\"nvidia-35\"/>\n    </mh:mdevs>|" > "$T/web1.xml"
        grep -q "mh:mdev uuid=\"$U3\"" "$T/web1.xml"

        # U1 is other's on B: the hostdev needs another UUID, and the kept
        # U3 is not one it may take.
        migrate_to_b web1
        echo "$stderr"
        [ "$status" -eq 0 ]
        new="$(xml_uuids "$T/web1.b.xml")"
        [ "$new" != "$U1" ]
        [ "$new" != "$U3" ]
        [ "$(grep -c "uuid=\"$U3\"" "$T/web1.b.xml")" -eq 1 ]
        [ "$(record_get "$U3" state)" = free ]
        [ "$(record_get "$new" state)" = incoming ]
        finish_migration web1
        sim_use "$B"
        [ "$(record_get "$new" state)" = assigned ]
}

# --- migrate and restore: what they print, claim and say ------------------

# hook_traced NAME OP XMLFILE: "NAME OP begin -" on B, stdout and stderr
# apart, with the loader's record in $T/ld-NAME-OP.*.
hook_traced() {
        sim_use "$B"
        rm -f "$T/ld-$1-$2".*
        run --separate-stderr env LD_DEBUG=files LD_DEBUG_OUTPUT="$T/ld-$1-$2" "$MH_QEMU_HOOK" "$1" "$2" begin - < "$3"
}

@test "migrate and restore that keep every UUID print nothing and claim as before" {
        one_type_conf "$A"
        one_type_conf "$B" nvidia-35
        # both created on B with their own UUIDs
        domxml web1 "$U1,type=nvidia-35" "$U3,type=nvidia-35" > "$T/web1.xml"
        hook_traced web1 migrate "$T/web1.xml"
        echo "$stderr"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ -z "$stderr" ]
        for u in "$U1" "$U3"; do
                mdev_exists "$u"
                [ "$(mdev_type "$u")" = nvidia-35 ]
                [ "$(record_get "$u" guest)" = web1 ]
                [ "$(record_get "$u" state)" = incoming ]
                [ "$(record_get "$u" origin)" = created ]
        done
        assert_record_matches_sysfs
        # the retry (libvirt's second attempt) takes the same mdevs: choice 1
        hook_traced web1 migrate "$T/web1.xml"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(guest_records web1 | sort)" = "$(printf '%s\n' "$U1" "$U3" | sort)" ]

        # restore, the same way
        run -0 release web1 saved
        run ! mdev_exists "$U1"
        hook_traced web1 restore "$T/web1.xml"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        mdev_exists "$U1"
        [ "$(record_get "$U1" state)" = incoming ]
        assert_record_matches_sysfs
}

@test "migrate of an XML with a comment ends as migrate of the XML without" {
        one_type_conf "$B" nvidia-35
        # the same guest twice on two fresh roots of B: once as libvirt
        # formats it, once with a comment
        domxml web1 "$U1,type=nvidia-35" "$U2" > "$T/web1.xml"
        sed 's|<metadata>|<metadata><!-- by hand -->|' "$T/web1.xml" > "$T/web1.c.xml"
        hook_traced web1 migrate "$T/web1.xml"
        [ "$status" -eq 0 ]
        lite_out="$output" lite_err="$stderr"
        lite_state="$(for u in $(records); do echo "$u $(record_get "$u" guest) $(record_get "$u" state) $(record_get "$u" type) $(record_get "$u" parent) $(mdev_parent "$u")"; done)"
        run -0 release web1 migrated
        [ -z "$(records)" ]
        hook_traced web1 migrate "$T/web1.c.xml"
        [ "$status" -eq 0 ]
        full_state="$(for u in $(records); do echo "$u $(record_get "$u" guest) $(record_get "$u" state) $(record_get "$u" type) $(record_get "$u" parent) $(mdev_parent "$u")"; done)"
        [ -n "$lite_state" ]
        [ "$lite_state" = "$full_state" ]
        [ -z "$lite_out" ]
        [ -z "$lite_err" ]
}

# u1_taken_on_b: B with nvidia-35 and nvidia-36 enabled (the second not
# used: a warning), and U1 held there by the guest "other"; B in use.
u1_taken_on_b() {
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35, nvidia-36
	EOF
        sim_use "$B"
        run -0 prepare other "$U1,type=nvidia-35"
}

@test "migrate that must rewrite a UUID prints the XML and says everything once" {
        u1_taken_on_b
        domxml web1 "$U1,type=nvidia-35" "$U2,type=nvidia-35" > "$T/web1.xml"
        MDEV_HOOKS_LOG_LEVEL=info hook_traced web1 migrate "$T/web1.xml"
        echo "$stderr"
        [ "$status" -eq 0 ]
        [ -n "$output" ]
        printf '%s\n' "$output" > "$T/web1.b.xml"
        new="$(xml_uuids "$T/web1.b.xml" | grep -v "$U2")"
        [ "$new" != "$U1" ]
        assert_only_uuids_changed "$T/web1.xml" "$T/web1.b.xml" "$U1" "$new"
        run loaded_by "$T/ld-web1-migrate"
        [[ "$output" == *mdev-hooks-qemu-worker.so* ]]
        [[ "$output" == *libxml2* ]]
        # the config's warning once, each mdev's line once
        [ "$(grep -c "'nvidia-36' is not used" <<<"$stderr")" -eq 1 ]
        [ "$(grep -c "mdev $U2 -> $U2" <<<"$stderr")" -eq 1 ]
        [ "$(grep -c "mdev $U1 -> $new" <<<"$stderr")" -eq 1 ]
        [ "$(record_get "$U1" guest)" = other ]
        [ "$(record_get "$new" state)" = incoming ]
        [ "$(record_get "$U2" state)" = incoming ]
        assert_record_matches_sysfs
}

# big_domxml NAME SPEC...: domxml's guest grown past 512 KiB with disks.
big_domxml() {
        local disk="    <disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='/var/lib/libvirt/images/d.qcow2'/><target dev='vdb' bus='virtio'/></disk>"
        domxml "$@" | awk -v d="$disk" '{ print } /<emulator>/ { for (i = 0; i < 4000; i++) print d }'
}

# state_of: every record of the current root with what sysfs says of it.
state_of() {
        local u
        for u in $(records); do
                echo "$u $(record_get "$u" guest) $(record_get "$u" state) $(record_get "$u" origin) $(record_get "$u" type) $(record_get "$u" parent) $(mdev_parent "$u")"
        done
}

@test "migrate and prepare of a large XML end the same with or without a comment in it" {
        one_type_conf "$B" nvidia-35
        big_domxml web1 "$U1,type=nvidia-35" "$U2" > "$T/web1.xml"
        [ "$(stat -c %s "$T/web1.xml")" -ge $((512 * 1024)) ]
        sed 's|<metadata>|<metadata><!-- by hand -->|' "$T/web1.xml" > "$T/web1.c.xml"
        hook_traced web1 migrate "$T/web1.xml"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ -z "$stderr" ]
        lite_state="$(state_of)"
        [ -n "$lite_state" ]
        hook_traced web1 prepare "$T/web1.xml"
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" state)" = assigned ]
        [ "$(record_get "$U2" state)" = assigned ]
        assert_record_matches_sysfs
        run -0 release web1 destroyed
        [ -z "$(records)" ]

        # the same with a comment
        hook_traced web1 migrate "$T/web1.c.xml"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ -z "$stderr" ]
        [ "$(state_of)" = "$lite_state" ]
        run -0 release web1 destroyed

        # a config with errors: its message, and nothing else
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35
	bogus_key = 1
	EOF
        for op in migrate prepare; do
                hook_traced web1 "$op" "$T/web1.xml"
                [ "$status" -eq 1 ]
                [ -z "$output" ]
                [[ "$stderr" == "mdev-hooks: web1: the config has errors, fix it first (mdev-hooks check-config): "*"bogus_key"* ]]
                [ "$(grep -c . <<<"$stderr")" -eq 1 ]
        done
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
}

@test "a large migrate that rewrites a UUID sets up once and reads each candidate once" {
        u1_taken_on_b
        # U1 is taken here: it gets a new UUID
        big_domxml web1 "$U1,type=nvidia-35" "$U2,type=nvidia-35" > "$T/web1.xml"
        [ "$(stat -c %s "$T/web1.xml")" -ge $((512 * 1024)) ]
        sim_counters_reset
        # (LeakSanitizer cannot run under ptrace: valgrind.bats checks this
        # path for leaks untraced)
        run --separate-stderr env ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
                strace -f -qq -e trace=openat -o "$T/openat" "$MH_QEMU_HOOK" web1 migrate begin - < "$T/web1.xml"
        echo "$stderr"
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" > "$T/web1.b.xml"
        new="$(xml_uuids "$T/web1.b.xml" | grep -v "$U2")"
        [ "$new" != "$U1" ]
        assert_only_uuids_changed "$T/web1.xml" "$T/web1.b.xml" "$U1" "$new"
        grep -q 'mdev-hooks-qemu-worker\.so", ' "$T/openat"
        # one setup: the config read and the lock taken once, its warning said once
        [ "$(grep -cE '"etc/mdev-hooks/mdev-hooks.conf", .* = [0-9]+$' "$T/openat")" -eq 1 ]
        [ "$(grep -cE '"run/mdev-hooks/lock", .* = [0-9]+$' "$T/openat")" -eq 1 ]
        [ "$(grep -c "'nvidia-36' is not used" <<<"$stderr")" -eq 1 ]
        if [[ " ${SIM_FLAGS:-} " != *" -c "* ]]; then
                opens=$(sim_counters | awk '$NF ~ /nvidia-3[56]\/available_instances$/ { print $NF, $1 }')
                echo "$opens"
                [ -n "$opens" ]
                [ "$(awk '$2 != 1' <<< "$opens" | wc -l)" -eq 0 ]
        fi
        [ "$(record_get "$U1" guest)" = other ]
        [ "$(record_get "$new" state)" = incoming ]
        [ "$(record_get "$U2" state)" = incoming ]
        assert_record_matches_sysfs

        # a config with errors, and an XML with a comment: the config's
        # message, said once
        sed 's|<metadata>|<metadata><!-- by hand -->|' "$T/web1.xml" > "$T/web1.c.xml"
        conf_on "$B" <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35
	bogus_key = 1
	EOF
        run --separate-stderr "$MH_QEMU_HOOK" web1 migrate begin - < "$T/web1.c.xml"
        [ "$status" -eq 1 ]
        [ -z "$output" ]
        [[ "$stderr" == "mdev-hooks: web1: the config has errors, fix it first (mdev-hooks check-config): "*"bogus_key"* ]]
        [ "$(grep -c . <<<"$stderr")" -eq 1 ]
}
