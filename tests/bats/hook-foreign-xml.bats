#!/usr/bin/env bats
# Guests whose domain XML carries what other tools and users put there
# (tests/data/foreign-xml/: Nova's and libosinfo's metadata, comments, CDATA,
# processing instructions, entities and character references, another
# prefix or a default namespace for this project's metadata, qemu:override)
# are prepared, released and migrated as libvirt-formatted ones are: each
# document asks for one nvidia-36 mdev, which only the metadata names, and a
# rewrite changes the UUID's bytes and nothing else.

load hook-helpers

setup() {
        hook_setup nvidia-timesliced
        two_types_conf
        CORPUS="$MH_SOURCE_DIR/tests/data/foreign-xml"
}

# assert_held UUID STATE: the mdev exists as the metadata asks, recorded
# for the guest in that state.
assert_held() {
        mdev_exists "$1"
        [ "$(mdev_type "$1")" = nvidia-36 ]
        [ "$(mdev_parent "$1")" = "$P86" ]
        [ "$(record_get "$1" guest)" = guest ]
        [ "$(record_get "$1" state)" = "$2" ]
        assert_record_matches_sysfs
}

@test "the corpus holds each kind of foreign content, each document one mdev hostdev" {
        local f
        [ "$(find "$CORPUS" -name '*.xml' | wc -l)" -ge 9 ]
        for f in "$CORPUS"/*.xml; do
                run -0 "$MH_BUILD_DIR/tests/unit/domxml-check" < "$f"
                [ "$output" = "$U1" ]
        done
}

@test "guests with other tools' metadata prepare and release as libvirt-formatted ones" {
        local f
        for f in "$CORPUS"/*.xml; do
                run hook guest prepare begin - < "$f"
                echo "$(basename "$f"): $output"
                [ "$status" -eq 0 ]
                [ -z "$output" ]
                assert_held "$U1" assigned
                [ "$(record_get "$U1" origin)" = created ]
                run hook guest release end destroyed < "$f"
                [ "$status" -eq 0 ]
                [ -z "$output" ]
                mdev_absent "$U1"
                [ -z "$(records)" ]
        done
}

@test "guests with other tools' metadata reconnect as libvirt-formatted ones" {
        local f
        for f in "$CORPUS"/*.xml; do
                run -0 hook guest prepare begin - < "$f"
                run hook guest reconnect begin - < "$f"
                [ "$status" -eq 0 ]
                [ -z "$output" ]
                assert_held "$U1" assigned
                run -0 hook guest release end destroyed < "$f"
                mdev_absent "$U1"
        done
}

@test "guests with other tools' metadata migrate and restore keeping their UUID, printing nothing" {
        local f op
        for f in "$CORPUS"/*.xml; do
                for op in migrate restore; do
                        run --separate-stderr hook guest "$op" begin - < "$f"
                        echo "$(basename "$f") $op: $stderr"
                        [ "$status" -eq 0 ]
                        [ -z "$output" ]
                        [ -z "$stderr" ]
                        assert_held "$U1" incoming
                        run -0 hook guest release end migrated < "$f"
                        mdev_absent "$U1"
                done
        done
}

@test "guests with other tools' metadata migrate to a new UUID by changing only its bytes" {
        local f new
        run -0 prepare other "$U1,type=nvidia-36"
        for f in "$CORPUS"/*.xml; do
                run --separate-stderr hook guest migrate begin - < "$f"
                echo "$(basename "$f"): $stderr"
                [ "$status" -eq 0 ]
                [ -n "$output" ]
                printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/out.xml"
                run -0 "$MH_BUILD_DIR/tests/unit/domxml-check" < "$BATS_TEST_TMPDIR/out.xml"
                new="$output"
                [ "$new" != "$U1" ]
                # the input with every U1 replaced by the new UUID, byte for byte
                diff -u <(sed "s/$U1/$new/g" "$f") "$BATS_TEST_TMPDIR/out.xml"
                [ "$(record_get "$U1" guest)" = other ]
                mdev_exists "$new"
                [ "$(mdev_type "$new")" = nvidia-36 ]
                [ "$(record_get "$new" guest)" = guest ]
                [ "$(record_get "$new" state)" = incoming ]
                run -0 hook guest release end migrated < "$BATS_TEST_TMPDIR/out.xml"
                mdev_absent "$new"
        done
}
