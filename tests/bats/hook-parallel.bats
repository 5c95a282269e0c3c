#!/usr/bin/env bats
# Guests starting and stopping at the same time: the host-wide lock keeps the
# record and sysfs in agreement and nothing leaks.

load hook-helpers

setup() {
        hook_setup nvidia-timesliced
        # 16 instances of nvidia-35 on one GPU, nowhere else.
        config_types nvidia-35 "$P84" -- '[hooks]' 'lock_timeout = 60'
}

guest_uuid() {
        printf 'c0ffee00-0000-4000-8000-%012d' "$1"
}

@test "32 guests prepared in parallel on 16 free instances: exactly 16 succeed, record and sysfs agree, nothing leaks" {
        local i ok=0 failed=0
        for i in $(seq 1 32); do
                domxml "g$i" "$(guest_uuid "$i"),type=nvidia-35" > "$BATS_TEST_TMPDIR/g$i.xml"
        done
        for i in $(seq 1 32); do
                ( hook "g$i" prepare begin - < "$BATS_TEST_TMPDIR/g$i.xml" 2> "$BATS_TEST_TMPDIR/g$i.err"
                  echo $? > "$BATS_TEST_TMPDIR/g$i.rc" ) &
        done
        wait
        for i in $(seq 1 32); do
                if [ "$(cat "$BATS_TEST_TMPDIR/g$i.rc")" -eq 0 ]; then
                        ok=$((ok + 1))
                        [ "$(record_get "$(guest_uuid "$i")" guest)" = "g$i" ]
                else
                        failed=$((failed + 1))
                        grep -q "^mdev-hooks: g$i: no capacity for nvidia-35: $P84 has 0 of 16 left" "$BATS_TEST_TMPDIR/g$i.err"
                        mdev_absent "$(guest_uuid "$i")"
                fi
        done
        [ "$ok" -eq 16 ]
        [ "$failed" -eq 16 ]
        [ "$(sim_mdevs | wc -l)" -eq 16 ]
        [ "$(records | wc -l)" -eq 16 ]
        assert_record_matches_sysfs

        # Every guest stops (libvirt runs release for the failed ones too).
        for i in $(seq 1 32); do
                hook "g$i" release end - < "$BATS_TEST_TMPDIR/g$i.xml" &
        done
        wait
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
        [ "$(sim_available "$P84" nvidia-35)" -eq 16 ]
        # No temporary record files left behind either: at most the spare
        # that a removed record leaves for the next one (ledger.c).
        [ -z "$(ls -A "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" | grep -vx '\.spare')" ]
}

@test "prepare and release of different guests interleaved keep the record true" {
        local i
        for i in $(seq 1 8); do
                domxml "h$i" "$(guest_uuid "$i"),type=nvidia-35" "$(guest_uuid "$((i + 100))"),type=nvidia-35" > "$BATS_TEST_TMPDIR/h$i.xml"
        done
        for round in 1 2 3; do
                for i in $(seq 1 8); do
                        { hook "h$i" prepare begin - < "$BATS_TEST_TMPDIR/h$i.xml" 2>/dev/null
                          hook "h$i" release end - < "$BATS_TEST_TMPDIR/h$i.xml"; } &
                done
                wait
        done
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
}
