# Loaded by every bats file: where the built programs are, a private root
# directory per test, and small assertions. The simulator's helpers
# (sim_mount, sim_umount, sim_fault ...) live in tests/sim/sim.bash.

: "${MH_BUILD_DIR:?run the bats tests through meson test, or set MH_BUILD_DIR}"
: "${MH_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"

# The programs as installed, or as built. MH_PREFIX points at an installed
# tree (meson install --destdir) to test that instead.
if [ -n "${MH_PREFIX:-}" ]; then
        MH_CLI="$MH_PREFIX/usr/bin/mdev-hooks"
        MH_QEMU_HOOK="$MH_PREFIX/usr/libexec/mdev-hooks/mdev-hooks-qemu"
        MH_UDEV="$MH_PREFIX/usr/libexec/mdev-hooks/mdev-hooks-udev"
else
        MH_CLI="$MH_BUILD_DIR/helpers/mdev-hooks"
        MH_QEMU_HOOK="$MH_BUILD_DIR/hooks/mdev-hooks-qemu"
        MH_UDEV="$MH_BUILD_DIR/helpers/mdev-hooks-udev"
fi
MH_SIM="$MH_BUILD_DIR/tests/sim/mdev-sysfs-sim"
MH_FIXTURES="$MH_SOURCE_DIR/tests/fixtures"
MH_DATA="$MH_SOURCE_DIR/tests/data"
# Domain XML of a few guests, as libvirt formats it.
MH_GUESTS="$MH_FIXTURES/libvirt/guests"
export MH_CLI MH_QEMU_HOOK MH_UDEV MH_SIM MH_FIXTURES MH_DATA MH_GUESTS

# A test tool that is not installed: bash runs this in place of the command
# it did not find, so that the test fails saying which package to install
# (scripts/setup test installs them all), not only "command not found".
command_not_found_handle() {
        local pkg
        case "$1" in
        jq | strace | valgrind | mandoc | curl) pkg=$1 ;;
        pgrep | pkill) pkg=procps ;;
        promtool) pkg=prometheus ;;
        udevadm) pkg=udev ;;
        virsh) pkg=libvirt-clients ;;
        placement-api | placement-manage) pkg=placement-api ;;
        *)
                echo "bash: $1: command not found" >&2
                return 127
                ;;
        esac
        echo "$1 is not installed: apt-get install $pkg (or scripts/setup test, which installs every test tool)" >&2
        return 127
}

# Golden files: MH_REGENERATE=1 rewrites them instead of comparing.
# usage: assert_golden <expected-file> <actual-text>
assert_golden() {
        local expected="$1" actual="$2"
        if [ -n "${MH_REGENERATE:-}" ]; then
                mkdir -p "$(dirname "$expected")"
                printf '%s\n' "$actual" > "$expected"
                return 0
        fi
        # json-c 0.16 (Debian 12) prints an empty array or object as
        # "[\n  ]", json-c 0.18 (Debian 13) as "[]": that one difference
        # of the library's layout is folded on both sides.
        diff -u <(json_c_empty_fold < "$expected") <(printf '%s\n' "$actual" | json_c_empty_fold)
}
json_c_empty_fold() {
        perl -0pe 's/([\[{])\n[ \t]*([\]}])/$1$2/g'
}

# A fresh copy of a fixture tree as this test's root.
# usage: fixture_root <case>   -> sets and exports MDEV_HOOKS_ROOT
fixture_root() {
        MDEV_HOOKS_ROOT="$BATS_TEST_TMPDIR/root"
        mkdir -p "$MDEV_HOOKS_ROOT"
        cp -a "$MH_FIXTURES/$1/." "$MDEV_HOOKS_ROOT/"
        export MDEV_HOOKS_ROOT
}

# --- the config and the record under the current root ($MDEV_HOOKS_ROOT) ----
# One vocabulary for every bats file: config_write, config_types,
# config_timesliced; record_get, record_write, record_absent, records;
# boot_id.

# config_write [TEXT]: writes the config, TEXT or else stdin.
config_write() {
        mkdir -p "$MDEV_HOOKS_ROOT/etc/mdev-hooks"
        if [ $# -gt 0 ]; then
                printf '%s\n' "$1" > "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        else
                cat > "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        fi
}

# config_types TYPE ADDRESSES [TYPE ADDRESSES]... [-- LINE...]: a config that
# enables each TYPE on its parents (ADDRESSES: ", "-separated), then LINEs.
config_types() {
        local enabled="" sections=""
        while [ $# -ge 2 ] && [ "$1" != -- ]; do
                enabled+="${enabled:+, }$1"
                sections+=$'\n'"[mdev_$1]"$'\n'"device_addresses = $2"$'\n'
                shift 2
        done
        [ "${1:-}" != -- ] || shift
        config_write "[devices]
enabled_mdev_types = $enabled
$sections
$(printf '%s\n' "$@")"
}

# config_timesliced [LINE...]: the config for the nvidia-timesliced topology
# with both its types: nvidia-35 on 84 and 85, nvidia-36 (last) under its own
# resource class; each LINE is added at the end.
config_timesliced() {
        config_write "$(printf '%s\n' '[devices]' 'enabled_mdev_types = nvidia-35, nvidia-36' \
                '[mdev_nvidia-35]' 'device_addresses = 0000:84:00.0, 0000:85:00.0' \
                '[mdev_nvidia-36]' 'mdev_class = CUSTOM_NVIDIA_36' "$@")"
}

# write_errno TEXT FILE: writes TEXT to FILE in one write(2) (dd opens the
# file itself, so the message does not depend on the shell); prints "ok" or
# the errno name mapped from dd's message.
write_errno() {
        local out
        if out=$(printf '%s' "$1" | dd of="$2" conv=notrunc status=none 2>&1); then
                echo ok
                return
        fi
        case "$out" in
        *"File exists"*) echo EEXIST ;;
        *"No space left on device"*) echo ENOSPC ;;
        *"Invalid argument"*) echo EINVAL ;;
        *"Operation not permitted"*) echo EPERM ;;
        *"Permission denied"*) echo EACCES ;;
        *"No such file or directory"*) echo ENOENT ;;
        *"No such device or address"*) echo ENXIO ;;
        *"Device or resource busy"*) echo EBUSY ;;
        *"Numerical result out of range"*) echo ERANGE ;;
        *"Input/output error"*) echo EIO ;;
        *"Too many users"*) echo EUSERS ;;
        *) echo "other: $out" ;;
        esac
}

# boot_id: this root's boot id.
boot_id() {
        cat "$MDEV_HOOKS_ROOT/proc/sys/kernel/random/boot_id"
}

# records: the UUIDs that have a record, sorted.
records() {
        local d="$MDEV_HOOKS_ROOT/var/lib/mdev-hooks"
        [ -d "$d" ] || return 0
        ls "$d" | grep -E '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' | sort || true
}

# record_get UUID KEY: one value of a record ("" when there is no record).
record_get() {
        local f="$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$1"
        [ -f "$f" ] || return 0
        sed -n "s/^$2 = //p" "$f"
}

# record_absent UUID: fails the test when UUID has a record.
record_absent() {
        [ ! -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$1" ]
}

# record_write UUID PARENT TYPE STATE ORIGIN GUEST [key=value...]: writes a
# record the way ledger.c does (ledger.h), as a hook would have left it.
# Keys that may be overridden: guest_uuid (default: the fixture guest's in
# $MH_GUESTS, else empty), boot_id (default: this boot), since (default:
# now), remove_pending (no).
record_write() {
        local uuid="$1" parent="$2" type="$3" state="$4" origin="$5" guest="$6" kv
        local guest_uuid="" boot since remove_pending=no dir="$MDEV_HOOKS_ROOT/var/lib/mdev-hooks"
        shift 6
        [ -n "$guest" ] && [ -f "$MH_GUESTS/$guest.xml" ] &&
                guest_uuid="$(sed -n 's#.*<uuid>\(.*\)</uuid>.*#\1#p' "$MH_GUESTS/$guest.xml" | head -n1)"
        boot="$(boot_id)"
        since="$(date +%s)"
        for kv in "$@"; do
                case "$kv" in
                guest_uuid=*) guest_uuid="${kv#*=}" ;;
                boot_id=*) boot="${kv#*=}" ;;
                since=*) since="${kv#*=}" ;;
                remove_pending=*) remove_pending="${kv#*=}" ;;
                *) echo "record_write: unknown key '$kv'" >&2; return 1 ;;
                esac
        done
        mkdir -p "$dir" && chmod 0700 "$dir" || return 1
        cat > "$dir/$uuid" <<EOF
[mdev]
uuid = $uuid
parent = $parent
type = $type
state = $state
origin = $origin
guest = $guest
guest_uuid = $guest_uuid
boot_id = $boot
since = $since
remove_pending = $remove_pending
EOF
}

# --- the host-wide lock ----------------------------------------------------
# Tests that need the lock held, or a process waiting for it, wait for that
# state (bounded), never for time.

# lock_hold LOCKFILE LINE: starts a process that takes LOCKFILE (flock), writes
# "<pid> LINE" into it as a hook does, and holds it until lock_let_go, or
# until the test's own process is gone (bats killed it: no teardown ran).
# Returns once it holds the lock; LOCK_HOLDER is its pid.
lock_hold() {
        local lock="$1" line="$2" i
        mkdir -p "$(dirname "$lock")"
        rm -f "$BATS_TEST_TMPDIR/lock-let-go"
        sh -c 'exec 9>> "$1"; flock 9; echo "$$ $2" > "$1"
               while [ ! -e "$3" ] && kill -0 "$4" 2> /dev/null; do sleep 0.05; done' \
                sh "$lock" "$line" "$BATS_TEST_TMPDIR/lock-let-go" "$BASHPID" 3>&- &
        LOCK_HOLDER=$!
        for i in $(seq 200); do
                grep -qs "$line" "$lock" && return 0
                sleep 0.05
        done
        echo "the lock holder never took $lock"
        return 1
}

# lock_let_go: the process of lock_hold lets go of the lock and ends.
lock_let_go() {
        touch "$BATS_TEST_TMPDIR/lock-let-go"
        wait "$LOCK_HOLDER" || true
        LOCK_HOLDER=""
}

# needs_crashpoints: skips the test unless this build has the crash points
# (meson -Dcrashpoints=true; scripts/test's builds have them).
needs_crashpoints() {
        grep -qx '#define MDEV_HOOKS_CRASHPOINTS 1' "$MH_BUILD_DIR/config-build.h" ||
                skip "built without -Dcrashpoints"
}

# stop_started: what a test started in the background and did not stop, as
# a test that failed half way leaves it: the lock holder of lock_hold lets
# go, then the jobs still running (a hook that waited for that lock goes on
# and ends) are waited for, at most 10 s, and killed after that. For the
# teardown.
stop_started() {
        local i
        [ -z "${LOCK_HOLDER:-}" ] || lock_let_go
        for i in $(seq 200); do
                [ -n "$(jobs -pr)" ] || return 0
                sleep 0.05
        done
        echo "teardown: killing what the test left running: $(jobs -r)" >&2
        kill $(jobs -pr) 2> /dev/null || true
        wait || true
}

# lock_waiter LOCKFILE: returns once some process waits in flock() for
# LOCKFILE (a "->" line for its inode in /proc/locks), at most 10 s.
lock_waiter() {
        local ino i
        ino=$(stat -c %i "$1") || return 1
        for i in $(seq 200); do
                grep -qE "^[0-9]+: -> FLOCK .*:$ino " /proc/locks && return 0
                sleep 0.05
        done
        echo "no process waits for the lock $1"
        return 1
}

# rule_wants DEVPATH VENDOR [DRIVER [TOTALVFS]]: `udevadm test --action=add`
# of the built rules alone on a fake PCI device of VENDOR, bound to DRIVER
# and with sriov_totalvfs if given, in a private mount namespace where a
# tmpfs plays /sys (as udev.bats's rules_test does): what the rule would
# run or want (SYSTEMD_WANTS) for a GPU's PF.
rule_wants() {
        local d="$BATS_TEST_TMPDIR/fakesys$1"
        mkdir -p "$d" "$BATS_TEST_TMPDIR/fakesys/bus/pci/devices"
        ln -sfn "$(realpath -m --relative-to="$d" "$BATS_TEST_TMPDIR/fakesys/bus/pci")" "$d/subsystem"
        if [ -n "${3:-}" ]; then
                mkdir -p "$BATS_TEST_TMPDIR/fakesys/bus/pci/drivers/$3"
                ln -sfn "$(realpath -m --relative-to="$d" "$BATS_TEST_TMPDIR/fakesys/bus/pci/drivers/$3")" "$d/driver"
        fi
        printf 'DRIVER=%s\n' "${3:-}" > "$d/uevent"
        [ -z "${4:-}" ] || echo "$4" > "$d/sriov_totalvfs"
        echo "$2" > "$d/vendor"
        cat > "$BATS_TEST_TMPDIR/ns.sh" <<NS
set -e
mount -t tmpfs none /sys
cp -a "$BATS_TEST_TMPDIR/fakesys/." /sys/
mount -t tmpfs none /run/udev 2>/dev/null || { mkdir -p /run/udev && mount -t tmpfs none /run/udev; }
for r in /etc/udev/rules.d /lib/udev/rules.d /usr/lib/udev/rules.d /usr/local/lib/udev/rules.d; do
        [ -d "\$r" ] && mount -t tmpfs none "\$r"
done
mkdir -p /run/udev/rules.d
cp "$MH_BUILD_DIR/udev-rules/60-mdev-hooks.rules" /run/udev/rules.d/
SYSTEMD_DEVICE_VERIFY_SYSFS=0 SYSTEMD_LOG_LEVEL=debug udevadm test --action=add "/sys$1" 2>&1
NS
        run unshare -m --propagation private bash "$BATS_TEST_TMPDIR/ns.sh"
}
