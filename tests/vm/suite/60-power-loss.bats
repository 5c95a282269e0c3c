# Group 6, power loss (tests/vm/README.md, "Power loss"): the record
# (/var/lib/mdev-hooks and its indexes) on a file system of its own over
# dm-log-writes, a storm of guests' starts, stops and migrations through
# the installed hook beside udev's events, then every crash state of the
# log (each flush and FUA point, and points between them) mounted as a new
# boot would find it and checked by power-check. Debian 13's image only:
# the checks take minutes under TCG.

load helpers
load power

setup_file() {
        [ "$(vm_suite_name)" = trixie ] || return 0
        vm_mtty_load
        vm_remove_all_mdevs
        vm_record_clear
        pw_config
        vm_libvirtd_wait 300
        pw_define_guests
}

teardown_file() {
        [ "$(vm_suite_name)" = trixie ] || return 0
        pw_undefine_guests
        pw_record_off
        vm_remove_all_mdevs
        vm_record_clear
}

setup() {
        [ "$(vm_suite_name)" = trixie ] ||
                skip "the power-loss tests run on Debian 13's image (tests/vm/run --suite trixie): they take minutes under TCG"
        export PW_REPLAY=/mh/suite/replay-log
        [ ! -s /mh/power.env ] || . /mh/power.env
        export PW_GUESTS PW_ROUNDS PW_BETWEEN PW_STRIDE MH_VM_OUT
        [ "${PW_STRIDE:-1}" != 0 ] || skip "MH_VM_POWER_STRIDE=0: the replayed logs are left out"
}

# The storm did what it is for: every guest started, some migrated with a
# new UUID, and the log holds the marks of each call.
storm_happened() {
        local i
        cat "$PW/journal"
        for i in $(seq "$PW_GUESTS"); do
                grep -qE "^[0-9]+ pw$i prepare 0 " "$PW/journal" || { echo "pw$i never started" >&2; return 1; }
        done
        grep -qE '^[0-9]+ pw[0-9]+m migrate 0 ' "$PW/journal" || { echo "no migration succeeded" >&2; return 1; }
        [ "$(awk '$2 == "mark" && $5 ~ /^e\./' "$PW/entries" | wc -l)" -eq "$(wc -l < "$PW/journal")" ] ||
                { echo "the log lacks end marks of the journal's calls" >&2; return 1; }
}

# Replays every crash state and reports the numbers (TAP comments).
replay_and_report() {
        local fs=$1
        vm_remove_all_mdevs
        rm -f "$MH_VM_OUT/power-states-$fs.txt" # power-check adds each state as it goes
        run pw_replay_all "$fs"
        echo "$output"
        cp "$PW/entries" "$MH_VM_OUT/power-entries-$fs.txt"
        [ "$status" -eq 0 ]
        local states distinct flushes
        states=$(wc -l < "$PW/states")
        distinct=$(grep -c ' checked tmp=' "$PW/states")
        flushes=$(grep -cE '^[0-9]+ [^ ]*(flush|fua)' "$PW/entries")
        echo "# $fs: $(grep -c . "$PW/entries") log entries ($flushes flush or FUA), $states crash states mounted and checked, $distinct distinct records run through a boot and the next hooks; $(grep -vc ' tmp=0$' "$PW/states") states held a temporary file a record write left" >&3
        # every check the replay ran got to its end, and there were some
        [ "$(sed -n 's/^replayed [0-9]* entries, \([0-9]*\) crash states checked$/\1/p' <<< "$output")" -eq "$states" ]
        [ "$states" -ge 3 ]
        [ "$distinct" -ge 2 ]
}

@test "power loss on ext4: every crash state of a storm of starts, stops and migrations leaves whole records that a boot and the next hooks bring back to the truth" {
        pw_logged_storm ext4
        storm_happened
        replay_and_report ext4
}

@test "power loss on XFS: every crash state of a storm of starts, stops and migrations leaves whole records that a boot and the next hooks bring back to the truth" {
        pw_logged_storm xfs
        storm_happened
        replay_and_report xfs
}
