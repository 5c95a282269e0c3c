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
