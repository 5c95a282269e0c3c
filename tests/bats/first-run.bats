#!/usr/bin/env bats
# A new operator's first guest with a vGPU: without a config, or with one
# that enables nothing, the hook's refusal names the file to write (with the
# root prefix the programs use). And `meson install` says what it installs.

load hook-helpers

setup() {
        hook_setup nvidia-timesliced
}

@test "without a config, prepare refuses and names the file to write and its example" {
        rm -f "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 1 ]
        echo "$output"
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: web1: "* ]]
        [[ "$output" == *"$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf does not exist"* ]]
        [[ "$output" == *"$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf.example"* ]]
        [[ "$output" == *"enabled_mdev_types"* ]]
        ! mdev_exists "$U1"
}

@test "without a config, an mdev without a type is refused the same way" {
        rm -f "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run prepare web1 "$U1"
        [ "$status" -eq 1 ]
        [[ "$output" == *"$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf does not exist"* ]]
}

@test "a config that enables nothing: the refusal names it" {
        config_write <<-EOF
	[hooks]
	release = keep
	EOF
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 1 ]
        echo "$output"
        [[ "$output" == *"$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf enables no type: set [devices] enabled_mdev_types"* ]]
}

@test "an incoming migration without a config names the file too" {
        rm -f "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        domxml web1 "$U1" > "$BATS_TEST_TMPDIR/web1.xml"
        run hook web1 migrate begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 1 ]
        echo "$output"
        [[ "$output" == *"$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf does not exist"* ]]
}

@test "a guest without mdevs starts without a config, silently" {
        rm -f "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run prepare web1
        [ "$status" -eq 0 ]
        [ -z "$output" ]
}

@test "meson install says it installs the config as mdev-hooks.conf.example" {
        # (--dry-run stops at the qemu.d link, whose target it did not install)
        run meson install -C "$MH_BUILD_DIR" --no-rebuild --destdir "$BATS_TEST_TMPDIR/dest"
        [ "$status" -eq 0 ]
        echo "$output" | grep -i conf
        grep -qE '^Installing .*/mdev-hooks\.conf\.example to .*/etc/mdev-hooks$' <<< "$output"
        ! grep -qE '^Installing conf/mdev-hooks\.conf to' <<< "$output"
        [ -f "$BATS_TEST_TMPDIR/dest/etc/mdev-hooks/mdev-hooks.conf.example" ]
        [ ! -e "$BATS_TEST_TMPDIR/dest/etc/mdev-hooks/mdev-hooks.conf" ]
}

@test "without /dev/fuse, the demo says what is missing and how to get it" {
        why=$(unshare -m true 2>&1) || skip "cannot make a mount namespace here (uid $(id -u)): ${why:-unshare -m failed}"
        # a /dev without fuse, as in a container started without --device /dev/fuse
        run unshare -m sh -c '
                mount --make-rprivate / && mount -t tmpfs tmpfs /dev &&
                mknod -m 666 /dev/null c 1 3 && exec "$1"' sh "$MH_SOURCE_DIR/scripts/demo"
        echo "$output"
        [ "$status" -eq 1 ]
        [[ "$output" == *"/dev/fuse is missing"* ]]
        [[ "$output" == *"modprobe fuse"* ]]
        [[ "$output" == *"--device /dev/fuse"* ]]
        [[ "$output" != *"fuse: device not found"* ]]
}
