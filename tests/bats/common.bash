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
export MH_CLI MH_QEMU_HOOK MH_UDEV MH_SIM MH_FIXTURES MH_DATA

# Golden files: MH_REGENERATE=1 rewrites them instead of comparing.
# usage: assert_golden <expected-file> <actual-text>
assert_golden() {
        local expected="$1" actual="$2"
        if [ -n "${MH_REGENERATE:-}" ]; then
                mkdir -p "$(dirname "$expected")"
                printf '%s\n' "$actual" > "$expected"
                return 0
        fi
        diff -u "$expected" <(printf '%s\n' "$actual")
}

# A fresh copy of a fixture tree as this test's root.
# usage: fixture_root <case>   -> sets and exports MDEV_HOOKS_ROOT
fixture_root() {
        MDEV_HOOKS_ROOT="$BATS_TEST_TMPDIR/root"
        mkdir -p "$MDEV_HOOKS_ROOT"
        cp -a "$MH_FIXTURES/$1/." "$MDEV_HOOKS_ROOT/"
        export MDEV_HOOKS_ROOT
}

# --- the host-wide lock ----------------------------------------------------
# Tests that need the lock held, or a process waiting for it, wait for that
# state (bounded), never for time.

# lock_hold LOCKFILE LINE: starts a process that takes LOCKFILE (flock), writes
# "<pid> LINE" into it as a hook does, and holds it until lock_let_go. Returns
# once it holds the lock; LOCK_HOLDER is its pid.
lock_hold() {
        local lock="$1" line="$2" i
        mkdir -p "$(dirname "$lock")"
        rm -f "$BATS_TEST_TMPDIR/lock-let-go"
        sh -c 'exec 9>> "$1"; flock 9; echo "$$ $2" > "$1"; while [ ! -e "$3" ]; do sleep 0.05; done' \
                sh "$lock" "$line" "$BATS_TEST_TMPDIR/lock-let-go" 3>&- &
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
