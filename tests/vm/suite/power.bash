# The power-loss tests (60-power-loss.bats, and the power cuts of
# tests/vm/run --power-cuts): a storm of guests' prepares, releases and
# migrations run through the installed hook, with the record on a file
# system of its own, and the checks of what a power cut in the middle of it
# leaves. Sourced after helpers.bash. tests/vm/README.md, "Power loss", says
# what is checked and why.

PW=/tmp/power                       # images, the log, the storm's journal (tmpfs)
PW_MNT=/srv/pw-rec                  # the record's file system during the storm
PW_SNAP=/srv/pw-snap                # a crash state, mounted
PW_ROOT=/srv/pw-root                # MDEV_HOOKS_ROOT of the checks: a new boot
PW_GUESTS=${PW_GUESTS:-3}           # guests storming at once
PW_ROUNDS=${PW_ROUNDS:-3}           # start/migrate/stop cycles of each
PW_LW=mhlw                          # the dm-log-writes device
PW_TYPE=mtty-1

pw_log() {
        echo "power: $*" >&2
}

pw_guest_uuid() {
        printf '5a5a0000-0000-4000-8000-%012x\n' $((0x700 + $1))
}

# Guest i holds 1 + i % 2 mdevs of mtty-1 (mtty's pool holds 24).
pw_mdevs() {
        local i=$1 k
        for k in $(seq $((1 + i % 2))); do
                printf '9e9e0000-0000-4000-8000-%04x%08x:%s\n' "$i" "$k" "$PW_TYPE"
        done
}

# The XML of the persistent guest pw<i> (its definition in libvirt too).
pw_xml() {
        # shellcheck disable=SC2046
        vm_domxml "pw$1" "$(pw_guest_uuid "$1")" $(pw_mdevs "$1")
}

# The mdev UUIDs a domain XML names, comma-separated.
pw_xml_uuids() {
        sed -n "s/.*<address uuid=['\"]\([0-9a-f-]*\)['\"].*/\1/p" "$1" | paste -sd, -
}

# A mark of what the storm has done (a call begun, "b.SEQ.GUEST.OP", or
# acknowledged, "e.SEQ"): in the log of the record's device, if there is
# one (the replay knows from it what had been done at each entry), and in
# the file $PW_MARKS, if set, made durable at once (the power cuts: on the
# host's share, not on the disk that is cut).
pw_mark() {
        if [ -n "${PW_MARKS:-}" ]; then
                echo "$1" >> "$PW_MARKS"
                sync "$PW_MARKS"
        fi
        [ -e "/dev/mapper/$PW_LW" ] || return 0
        dmsetup message "$PW_LW" 0 mark "$1"
}

# pw_op SEQ GUEST OP XML [OUT]: one hook call as libvirt makes it, its begin
# and end marked, its outcome in the journal ("SEQ GUEST OP RC UUIDS": the
# UUIDs the guest holds after it, as far as the storm knows). The journal
# line is made durable before the end mark: after a power cut the journal
# (on the data disk, tests/vm/run --power-cuts) lists only what was done.
pw_op() {
        local seq=$1 guest=$2 op=$3 xml=$4 out=${5:-/dev/null} rc uuids=
        pw_mark "b.$seq.$guest.$op"
        case "$op" in
        prepare) "$HOOK" "$guest" prepare begin - < "$xml" > /dev/null 2>> "$PW/hook.err" ;;
        migrate) "$HOOK" "$guest" migrate begin - < "$xml" > "$out" 2>> "$PW/hook.err" ;;
        release) "$HOOK" "$guest" release end - < "$xml" > /dev/null 2>> "$PW/hook.err" ;;
        esac
        rc=$?
        if [ "$rc" -eq 0 ]; then
                case "$op" in
                prepare) uuids=$(pw_xml_uuids "$xml") ;;
                migrate) if [ -s "$out" ]; then uuids=$(pw_xml_uuids "$out"); else uuids=$(pw_xml_uuids "$xml"); fi ;;
                esac
        fi
        echo "$seq $guest $op $rc ${uuids:--}" >> "$PW_JOURNAL"
        sync "$PW_JOURNAL"
        pw_mark "e.$seq"
        return "$rc"
}

# One guest's part of the storm: start (prepare), on odd rounds migrate to
# pw<i>m on this host (migrate, then the destination's prepare, then the
# source's release, as libvirt runs them), stop. A failed prepare is
# followed by the release libvirt runs after it.
pw_worker() {
        local i=$1 r seq=$(( $1 * 100000 )) x="$PW/pw$1.xml" mx="$PW/pw$1m.in.xml" m="$PW/pw$1m.xml"
        # the incoming XML names the destination's domain (virsh migrate --dname)
        sed "s|<name>pw$i</name>|<name>pw${i}m</name>|" "$x" > "$mx"
        for r in $(seq "$PW_ROUNDS"); do
                seq=$((seq + 1)); pw_op "$seq" "pw$i" prepare "$x"
                if [ $((r % 2)) -eq 1 ]; then
                        seq=$((seq + 1)); pw_op "$seq" "pw${i}m" migrate "$mx" "$m.out"
                        if [ -s "$m.out" ]; then cp "$m.out" "$m"; else cp "$mx" "$m"; fi
                        seq=$((seq + 1)); pw_op "$seq" "pw${i}m" prepare "$m"
                        seq=$((seq + 1)); pw_op "$seq" "pw$i" release "$x"
                        seq=$((seq + 1)); pw_op "$seq" "pw${i}m" release "$m"
                else
                        seq=$((seq + 1)); pw_op "$seq" "pw$i" release "$x"
                fi
        done
}

# udev's part beyond the events the hooks' own creates and removes raise:
# a free mdev (release = keep) removed by hand now and then, and the
# parent's registration event. Until $PW/stop exists. The removal is made
# under the host-wide lock, the record read again there: with real guests
# the kernel refuses to remove an mdev a QEMU holds open, and a hook may
# claim a free mdev between the look and the remove; here no QEMU holds
# any.
pw_events() {
        local u n=0 devpath subsystem
        devpath=$(readlink -f /sys/class/mdev_bus/mtty) devpath=${devpath#/sys}
        subsystem=$(basename "$(readlink /sys/class/mdev_bus/mtty/subsystem)")
        while [ ! -e "$PW/stop" ]; do
                n=$((n + 1))
                u=$(mdev-hooks list --json 2>/dev/null | jq -r '[.mdevs[] | select(.state == "free")][0].uuid // empty')
                if [ -n "$u" ]; then
                        flock -w 60 /run/mdev-hooks/lock sh -c '
                                grep -qx "state = free" "$1/$2" && echo 1 > "$3/$2/remove"' \
                                remove "$LEDGER" "$u" "$MDEV_DEVS" 2>/dev/null || true
                fi
                if [ $((n % 3)) -eq 0 ]; then
                        env -i PATH="$PATH" ACTION=change SUBSYSTEM="$subsystem" DEVPATH="$devpath" \
                                SEQNUM=$((900000 + n)) MDEV_STATE=registered /usr/libexec/mdev-hooks/mdev-hooks-udev mtty
                fi
                sleep 0.2 # pacing only: what this races with is what it is for
        done
}

# The storm: the guests' workers at once, and the events beside them.
pw_storm() {
        local i pids=() ev rc=0
        rm -f "$PW/stop"
        for i in $(seq "$PW_GUESTS"); do
                pw_xml "$i" > "$PW/pw$i.xml"
        done
        pw_events &
        ev=$!
        for i in $(seq "$PW_GUESTS"); do
                pw_worker "$i" &
                pids+=($!)
        done
        for i in "${pids[@]}"; do
                wait "$i" || true
        done
        touch "$PW/stop"
        wait "$ev" || rc=1
        vm_udev_settle || rc=1
        return "$rc"
}

# The persistent guests, defined in libvirt (not started): reconcile, after
# a boot, keeps a defined guest's records (marked lost), and drops those of
# the transient migration destinations pw<i>m, gone with the power.
pw_define_guests() {
        local i
        mkdir -p "$PW"
        for i in $(seq "$PW_GUESTS"); do
                pw_xml "$i" > "$PW/def-pw$i.xml"
                virsh -c qemu:///system -q define "$PW/def-pw$i.xml" > /dev/null || return 1
        done
}

pw_undefine_guests() {
        local i
        for i in $(seq "$PW_GUESTS"); do
                virsh -c qemu:///system -q undefine "pw$i" > /dev/null 2>&1 || true
        done
}

pw_config() {
        vm_config "$PW_TYPE" release=keep lock_timeout=120
}

# The record's directories on the file system at DIR, where the installed
# programs find them (/var/lib/mdev-hooks and the indexes beside it).
pw_record_on() {
        local dir=$1 d
        rm -rf "$LEDGER" "$LEDGER.by-guest" "$LEDGER.by-parent"
        mkdir -p "$dir/mdev-hooks"
        chmod 700 "$dir/mdev-hooks"
        for d in mdev-hooks mdev-hooks.by-guest mdev-hooks.by-parent; do
                ln -s "$dir/$d" "/var/lib/$d"
        done
}

pw_record_off() {
        rm -f "$LEDGER" "$LEDGER.by-guest" "$LEDGER.by-parent"
}

pw_mkfs() {
        case "$1" in
        # no discard of the whole device: the log would hold it, and the
        # replay write it out as zeros
        ext4) mkfs.ext4 -q -F -E nodiscard "$2" ;;
        xfs) mkfs.xfs -q -f -K "$2" ;;
        esac
}

pw_size_mb() {
        case "$1" in
        ext4) echo 64 ;;
        xfs) echo 320 ;; # mkfs.xfs refuses less than 300 MB
        esac
}

# pw_logged_storm FS: the storm with the record on FS over dm-log-writes;
# leaves the log in $PW/log.img and the entries in $PW/entries.
pw_logged_storm() {
        local fs=$1 size dev logdev sectors
        size=$(pw_size_mb "$fs")
        modprobe -a loop dm-log-writes dm-snapshot "$fs" || return 1
        rm -rf "$PW" && mkdir -p "$PW" "$PW_MNT" || return 1
        PW_JOURNAL=$PW/journal
        : > "$PW_JOURNAL"
        truncate -s "${size}M" "$PW/data.img" && truncate -s 1G "$PW/log.img" || return 1
        dev=$(losetup -f --show "$PW/data.img") && logdev=$(losetup -f --show "$PW/log.img") || return 1
        # the log starts empty: a stale super would be replayed
        dd if=/dev/zero of="$logdev" bs=4096 count=1 conv=fsync status=none || return 1
        sectors=$(blockdev --getsz "$dev")
        dmsetup create "$PW_LW" --table "0 $sectors log-writes $dev $logdev" || return 1
        pw_mkfs "$fs" "/dev/mapper/$PW_LW" || return 1
        mount "/dev/mapper/$PW_LW" "$PW_MNT" || return 1
        pw_record_on "$PW_MNT"
        sync -f "$PW_MNT/mdev-hooks"
        pw_mark storm-start
        pw_storm
        local rc=$?
        pw_record_off
        umount "$PW_MNT" || rc=1
        dmsetup remove --retry "$PW_LW" || rc=1
        losetup -d "$dev" "$logdev"
        rm -f "$PW/data.img"
        "$PW_REPLAY" list "$PW/log.img" > "$PW/entries" || rc=1
        return "$rc"
}

# The fake root of the checks: this kernel's /sys, a new boot id each time,
# an empty /run, the config, and /var/lib on the crash state.
pw_root_setup() {
        mkdir -p "$PW_ROOT/sys" "$PW_ROOT/etc/mdev-hooks" "$PW_ROOT/proc/sys/kernel/random" "$PW_SNAP"
        mountpoint -q "$PW_ROOT/sys" || mount --bind /sys "$PW_ROOT/sys" || return 1
        cp "$CONF" "$PW_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        ln -sfn /proc/sys/kernel/random/uuid "$PW_ROOT/proc/sys/kernel/random/uuid"
        mkdir -p "$PW_ROOT/var"
        ln -sfn "$PW_SNAP" "$PW_ROOT/var/lib"
}

pw_root_teardown() {
        ! mountpoint -q "$PW_ROOT/sys" || umount "$PW_ROOT/sys" || return 1
        rm -rf --one-file-system "$PW_ROOT"
}

# pw_replay_all FS: every crash state of the storm's log, checked by
# power-check; prints the replay's summary line.
pw_replay_all() {
        local fs=$1 start rdev cdev size rc
        size=$(pw_size_mb "$fs")
        start=$(awk '$2 == "mark" && $5 == "storm-start" { print $1 }' "$PW/entries")
        [ -n "$start" ] || { pw_log "no storm-start mark in the log"; return 1; }
        truncate -s "${size}M" "$PW/replay.img" && truncate -s "${size}M" "$PW/cow.img" || return 1
        rdev=$(losetup -f --show "$PW/replay.img") && cdev=$(losetup -f --show "$PW/cow.img") || return 1
        pw_root_setup || return 1
        rm -rf "$PW/seen" && mkdir -p "$PW/seen"
        PW_FS=$fs PW_RDEV=$rdev PW_CDEV=$cdev \
                "$PW_REPLAY" replay "$PW/log.img" "$rdev" --check-from "$start" --between "${PW_BETWEEN:-4}" \
                --stride "${PW_STRIDE:-1}" \
                --check "bash /mh/suite/power-check"
        rc=$?
        pw_root_teardown
        losetup -d "$rdev" "$cdev"
        rm -f "$PW/replay.img" "$PW/cow.img"
        return "$rc"
}

# vm_record_get for a record directory elsewhere: DIR UUID KEY.
vm_record_get_in() {
        sed -n "s/^$3 *= *//p" "$1/$2" 2>/dev/null | head -1
}

# --- the checks (power-check for a replayed state, power-cut after a real
# cut); each prints one line on stderr and returns 1 when it fails ---------

# The environment of a program run in ROOT ("" for the real root).
pw_in() {
        local root=$1
        shift
        if [ -n "$root" ]; then MDEV_HOOKS_ROOT=$root "$@"; else "$@"; fi
}

# pw_state_at MARKS: from the storm's marks before the crash (b.SEQ.GUEST.OP
# when a call began, e.SEQ when it was acknowledged) and its journal, sets
# PW_INFLIGHT (guests with a call begun and not acknowledged) and PW_HELD
# ("GUEST UUID" lines: the mdevs that an idle persistent guest held, its last
# acknowledged call having been a successful prepare).
pw_state_at() {
        local marks=$1
        PW_INFLIGHT=$(awk -F. '
                $1 == "e" { done[$2] = 1; next }
                $1 == "b" { begun[$2] = $3 }
                END { for (s in begun) if (!(s in done)) print begun[s] }' "$marks" | sort -u)
        PW_HELD=$(awk -v inflight=" $(tr '\n' ' ' <<< "$PW_INFLIGHT") " '
                FILENAME == ARGV[1] { if ($1 ~ /^e\./) { split($1, a, "."); acked[a[2]] = 1 }; next }
                ($1 in acked) && $2 ~ /^pw[0-9]+$/ && index(inflight, " " $2 " ") == 0 {
                        if (!($2 in last) || $1 + 0 > last[$2] + 0) { last[$2] = $1; op[$2] = $3; rc[$2] = $4; u[$2] = $5 }
                }
                END {
                        for (g in last)
                                if (op[g] == "prepare" && rc[g] == 0) {
                                        k = split(u[g], us, ",")
                                        for (i = 1; i <= k; i++) print g, us[i]
                                }
                }' "$marks" "$PW_JOURNAL" | sort)
}

# Every file in the record directory REC is a whole record.
pw_check_whole() {
        local rec=$1 f b
        [ -d "$rec" ] || { echo "no record directory" >&2; return 1; }
        for f in "$rec"/*; do
                [ -e "$f" ] || continue
                b=${f##*/}
                [ -f "$f" ] || { echo "'$b' in the record directory is not a file" >&2; return 1; }
                [ -s "$f" ] || { echo "the record '$b' is empty" >&2; return 1; }
                head -1 "$f" | grep -qx '\[mdev\]' ||
                        { echo "the record '$b' does not start with [mdev]: $(head -c 80 "$f" | tr '\n' ' ')" >&2; return 1; }
                grep -qx "uuid = $b" "$f" || { echo "the record '$b' does not name its own UUID" >&2; return 1; }
                tail -1 "$f" | grep -qE '^remove_pending = (yes|no)$' ||
                        { echo "the record '$b' is cut short: $(tail -c 80 "$f" | tr '\n' ' ')" >&2; return 1; }
        done
}

# pw_check_held REC [STATE]: each of $PW_HELD has its record, naming its
# guest (and in STATE).
pw_check_held() {
        local rec=$1 state=${2:-} g u got
        while read -r g u; do
                [ -n "$g" ] || continue
                [ -f "$rec/$u" ] || { echo "$g held $u (its prepare was acknowledged), and the record has no file for it" >&2; return 1; }
                got=$(vm_record_get_in "$rec" "$u" guest)
                [ "$got" = "$g" ] || { echo "$g held $u, and its record names '$got'" >&2; return 1; }
                [ -z "$state" ] || [ "$(vm_record_get_in "$rec" "$u" state)" = "$state" ] ||
                        { echo "$g's $u is not recorded $state: $(tr '\n' ' ' < "$rec/$u")" >&2; return 1; }
        done <<< "$PW_HELD"
}

# pw_reconcile ROOT: what reconcile finds holds no unreadable record, and
# --apply fixes all of it (one run: its JSON lists what it found).
pw_reconcile() {
        local root=$1 rc=0
        pw_in "$root" mdev-hooks reconcile --connect qemu:///system --apply --json > "$PW/reconcile.json" 2> "$PW/reconcile.err" || rc=$?
        jq -e '[.findings[] | select(.finding == "unreadable-record" or .finding == "unreadable-records")] | length == 0' \
                "$PW/reconcile.json" > /dev/null || {
                echo "reconcile finds a record that does not parse: $(jq -c '[.findings[] | .message]' "$PW/reconcile.json" 2>&1) $(tr '\n' ' ' < "$PW/reconcile.err")" >&2
                return 1
        }
        [ "$rc" -eq 0 ] || {
                echo "reconcile --apply did not fix everything (exit $rc): $(jq -c '[.findings[] | select(.result != "done") | .message]' "$PW/reconcile.json" 2>&1) $(tr '\n' ' ' < "$PW/reconcile.err")" >&2
                return 1
        }
}

# pw_check_next ROOT REC: the next events after a boot. Every persistent
# guest starts (prepare) with exactly its mdevs, no mdev is recorded for a
# guest whose XML does not name it, and once every guest has stopped
# (release) no record is assigned or incoming: each release found its
# records through the index. Leaves mtty without mdevs.
pw_check_next() {
        local root=$1 rec=$2 i u f g left
        for i in $(seq "$PW_GUESTS"); do
                pw_in "$root" "$HOOK" "pw$i" prepare begin - < "$PW/pw$i.xml" 2> "$PW/next.err" ||
                        { echo "after the boot, pw$i does not start: $(tr '\n' ' ' < "$PW/next.err")" >&2; return 1; }
        done
        for i in $(seq "$PW_GUESTS"); do
                for u in $(pw_xml_uuids "$PW/pw$i.xml" | tr , ' '); do
                        [ -e "$MDEV_DEVS/$u" ] || { echo "pw$i started without its mdev $u" >&2; return 1; }
                        [ "$(vm_record_get_in "$rec" "$u" guest) $(vm_record_get_in "$rec" "$u" state)" = "pw$i assigned" ] ||
                                { echo "pw$i started, and its $u is recorded as: $(tr '\n' ' ' < "$rec/$u" 2>/dev/null)" >&2; return 1; }
                done
        done
        for f in "$rec"/*; do
                [ -f "$f" ] || continue
                u=${f##*/} g=$(vm_record_get_in "$rec" "${f##*/}" guest)
                case "$(vm_record_get_in "$rec" "$u" state)" in
                assigned|incoming)
                        grep -q "uuid='$u'" "$PW/$g.xml" 2>/dev/null ||
                                { echo "$u is recorded for $g, whose XML does not name it (a second guest's mdev?)" >&2; return 1; } ;;
                esac
        done
        for i in $(seq "$PW_GUESTS"); do
                pw_in "$root" "$HOOK" "pw$i" release end - < "$PW/pw$i.xml" 2> "$PW/next.err" ||
                        { echo "pw$i's release failed: $(tr '\n' ' ' < "$PW/next.err")" >&2; return 1; }
        done
        left=$(grep -lE '^state = (assigned|incoming)$' "$rec"/* 2>/dev/null | tr '\n' ' ')
        [ -z "$left" ] || { echo "every guest stopped, and these records are still held: $left" >&2; return 1; }
        vm_remove_all_mdevs
}
