#!/usr/bin/env bats
# `mdev-hooks metrics`: the Prometheus text format for node_exporter's
# textfile collector, on the sysfs simulator with guests started by the real
# hook. The golden file is tests/data/metrics/<case>.expected
# (MH_REGENERATE=1 rewrites it); the record's timestamp, which is the time
# of the test, is masked there and checked on its own.

load hook-helpers

U1=9a1b2c3d-0000-4000-8000-000000000001
U2=9a1b2c3d-0000-4000-8000-000000000002
F1=9a1b2c3d-0000-4000-8000-0000000000f1

# A host with two guests (one stopped with release = keep) and a foreign mdev.
timesliced_host() {
        sim_mount nvidia-timesliced
        config_timesliced 'max_instances = 20' '[hooks]' 'release = keep'
        prepare web1 "$U1,type=nvidia-35" >/dev/null
        prepare web2 "$U2,type=nvidia-36" >/dev/null
        release web2 >/dev/null
        sim_create 0000:85:00.0 nvidia-35 "$F1"
}

masked() {
        sed -E 's/^(mdev_hooks_record_last_change_timestamp_seconds) [0-9.]+$/\1 TIMESTAMP/' <<<"$1"
}

@test "metrics prints capacity per parent and type, mdevs per state and parents registered" {
        timesliced_host
        run -0 "$MH_CLI" metrics
        assert_golden "$MH_DATA/metrics/nvidia-timesliced.expected" "$(masked "$output")"
}

@test "metrics gives the same numbers as inventory" {
        timesliced_host
        run -0 "$MH_CLI" metrics
        metrics="$output"
        run -0 "$MH_CLI" inventory --json
        checked=0
        while read -r parent type total used free; do
                grep -qxF "mdev_hooks_parent_capacity_vgpus{class=\"$(jq -r ".parents[] | select(.parent == \"$parent\") | .mdev_class" <<<"$output")\",parent=\"$parent\",type=\"$type\"} $total" <<<"$metrics"
                grep -qE "^mdev_hooks_parent_used_vgpus\{.*parent=\"$parent\".*\} $used\$" <<<"$metrics"
                grep -qE "^mdev_hooks_parent_free_vgpus\{.*parent=\"$parent\".*\} $free\$" <<<"$metrics"
                checked=$((checked + 1))
        done < <(jq -r '.parents[] | "\(.parent) \(.type) \(.total) \(.used) \(.free)"' <<<"$output")
        [ "$checked" -eq 4 ]
}

@test "metrics: promtool check metrics accepts the output" {
        command -v promtool >/dev/null || skip "promtool is not installed (Debian package prometheus; scripts/setup installs it)"
        timesliced_host
        run -0 "$MH_CLI" metrics
        printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/m.prom"
        run -0 promtool check metrics < "$BATS_TEST_TMPDIR/m.prom"
        [ -z "$output" ]
        # an empty host too
        mkdir -p "$BATS_TEST_TMPDIR/empty"
        MDEV_HOOKS_ROOT="$BATS_TEST_TMPDIR/empty" run -0 "$MH_CLI" metrics
        printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/e.prom"
        run -0 promtool check metrics < "$BATS_TEST_TMPDIR/e.prom"
        [ -z "$output" ]
}

@test "metrics: the record's timestamp is when the record last changed" {
        timesliced_host
        run -0 "$MH_CLI" metrics
        t1=$(awk '$1 == "mdev_hooks_record_last_change_timestamp_seconds" { print $2 }' <<<"$output")
        [ "${t1%.*}" -eq "$(stat -c %Y "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks")" ]
        touch -d '2020-01-01 00:00:00 UTC' "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks"
        run -0 "$MH_CLI" metrics
        [[ "$output" == *$'\nmdev_hooks_record_last_change_timestamp_seconds 1577836800.000\n'* || "$output" == *$'\nmdev_hooks_record_last_change_timestamp_seconds 1577836800.000' ]]
        release web1 >/dev/null
        run -0 "$MH_CLI" metrics
        t2=$(awk '$1 == "mdev_hooks_record_last_change_timestamp_seconds" { print $2 }' <<<"$output")
        [ "${t2%.*}" -gt 1577836800 ]
}

@test "metrics on a host without a record leaves the timestamp out" {
        sim_mount nvidia-timesliced
        run -0 "$MH_CLI" metrics
        [[ "$output" != *record_last_change* ]]
        [[ "$output" == *$'\nmdev_hooks_parents_registered 4'* ]]
        [[ "$output" == *'mdev_hooks_mdevs{state="assigned"} 0'* ]]
}

@test "the example conf/mdev-hooks-metrics.service writes the textfile atomically" {
        timesliced_host
        unit="$MH_SOURCE_DIR/conf/mdev-hooks-metrics.service"
        cmd=$(sed -n 's/^ExecStart=//p' "$unit")
        [[ "$cmd" == "/bin/sh -c '"*"'" ]]
        script=${cmd#/bin/sh -c \'}
        script=${script%\'}
        dir="$BATS_TEST_TMPDIR/textfile"
        mkdir "$dir"
        # systemd expands ${TEXTFILE_DIR} from Environment=; mdev-hooks comes from PATH
        script=${script//\$\{TEXTFILE_DIR\}/$dir}
        PATH="$(dirname "$MH_CLI"):$PATH" run -0 /bin/sh -c "$script"
        [ "$(ls -A "$dir")" = "mdev-hooks.prom" ]
        run -0 "$MH_CLI" metrics
        [ "$(masked "$(cat "$dir/mdev-hooks.prom")")" = "$(masked "$output")" ]
}
