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

# prepare_waiting TAKEN: with nvidia-35 on 0000:84:00.0 and 0000:85:00.0
# and TAKEN instances of 84 taken by hand, starts w1's prepare while the
# test holds the lock, and returns once w1 holds both candidates' files
# open (it opens them before it waits: alloc_preopen()) and waits in
# flock(). WAITER: its job; lock_let_go lets it go on.
prepare_waiting() {
        local lock="$MDEV_HOOKS_ROOT/run/mdev-hooks/lock" i pid=""
        config_types nvidia-35 "$P84, $P85"
        for i in $(seq 1 "$1"); do
                sim_create "$P84" nvidia-35 "$(guest_uuid "$((200 + i))")"
        done
        lock_hold "$lock" "test holds the lock"
        domxml w1 "$U1,type=nvidia-35" > "$BATS_TEST_TMPDIR/w1.xml"
        hook w1 prepare begin - < "$BATS_TEST_TMPDIR/w1.xml" 2> "$BATS_TEST_TMPDIR/w1.err" 3>&- &
        WAITER=$!
        for i in $(seq 200); do
                pid=$(pgrep -f -x "$MH_QEMU_HOOK w1 prepare begin -" | head -n 1)
                [ -n "$pid" ] && [ "$(ls -l "/proc/$pid/fd" 2>/dev/null | grep -c '/available_instances$')" -eq 2 ] && break
                pid=""
                sleep 0.05
        done
        [ -n "$pid" ] || { echo "w1's prepare never opened its two candidates' files"; return 1; }
        lock_waiter "$lock"
}

# w1_placed PARENT: w1's prepare went on once the lock was let go, without
# a word, and placed its mdev on PARENT.
w1_placed() {
        lock_let_go
        wait "$WAITER"
        [ "$(mdev_parent "$U1")" = "$1" ]
        [ "$(record_get "$U1" guest)" = w1 ]
        [ ! -s "$BATS_TEST_TMPDIR/w1.err" ]
}

@test "a prepare that waits for the lock reads its candidates once it holds it: an instance freed meanwhile is used" {
        # 0000:84:00.0 full, by hand; 0000:85:00.0 empty
        prepare_waiting 16
        [ "$(sim_available "$P84" nvidia-35)" -eq 0 ]
        # It opened both files before the lock; one instance is freed now.
        sim_remove "$(guest_uuid 201)"
        # pack: 0000:84:00.0 with 1 left before 0000:85:00.0 with 16. What
        # was there before the lock (0 left) would have chosen 85.
        w1_placed "$P84"
}

@test "a prepare that waits for the lock leaves out a candidate that went meanwhile" {
        # pack would choose 0000:84:00.0 (1 left)
        prepare_waiting 15
        # The file it holds open is gone with its parent (kernfs: ENODEV).
        sim_unregister "$P84"
        w1_placed "$P85"
}

@test "a prepare that finds the lock free opens nothing ahead: only what it reads, once" {
        [[ " ${SIM_FLAGS:-} " != *" -c "* ]] || skip "the counters do not see what the kernel serves from its cache (-c)"
        # nvidia-45, one per GPU, listed on four parents: 84 full by hand,
        # so pack reads 84 and 85 (1 left, the first by name) and stops
        config_types nvidia-45 "$P84, $P85, $P86, $P87"
        sim_create "$P84" nvidia-45 "$(guest_uuid 201)"
        sim_counters_reset
        run prepare w1 "$U1,type=nvidia-45"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$P85" ]
        # opens, reads: 84 and 85 once each, 86 and 87 not even opened
        sim_counters | awk '$NF ~ /nvidia-45\/available_instances$/ && $1 + $2 > 0 { print $1, $2, $NF }' > "$BATS_TEST_TMPDIR/counts"
        cat "$BATS_TEST_TMPDIR/counts"
        [ "$(wc -l < "$BATS_TEST_TMPDIR/counts")" -eq 2 ]
        grep -q "^1 1 .*/$P84/mdev_supported_types/nvidia-45/available_instances$" "$BATS_TEST_TMPDIR/counts"
        grep -q "^1 1 .*/$P85/mdev_supported_types/nvidia-45/available_instances$" "$BATS_TEST_TMPDIR/counts"
}
