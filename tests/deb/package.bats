#!/usr/bin/env bats
# The Debian package, as built by scripts/deb (run by `scripts/deb --test`,
# or by hand: MH_DEB=build-deb/mdev-hooks_<v>_amd64.deb bats tests/deb/package.bats).
#
# 1. dpkg installs, removes and purges it in a throwaway root (a copy of the
#    nvidia fixture host, whose sys/ holds a running guest's mdevs), with the
#    maintainer scripts run chrootless under DPKG_ROOT: the files are those
#    of `meson install`, the record directory is made 0700, remove keeps the
#    record and the config, purge removes them, and no mdev is touched.
# 2. The maintainer scripts' actions on a running system (udev, libvirtd), in
#    a mount namespace where udevadm and systemctl are stand-ins that log
#    what they are asked and /var/lib, /run are private.

bats_require_minimum_version 1.5.0

setup_file() {
        : "${MH_DEB:?set MH_DEB to the .deb to test (scripts/deb --test does)}"
        MH_SOURCE_DIR="${MH_SOURCE_DIR:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
        export MH_SOURCE_DIR
}

setup() {
        [ "$(id -u)" -eq 0 ] || skip "dpkg --root and the mount namespace need root (uid $(id -u))"
        root="$BATS_TEST_TMPDIR/root"
        mkdir -p "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/info" "$root/usr/bin"
        touch "$root/var/lib/dpkg/status"
        cp -a "$MH_SOURCE_DIR/tests/fixtures/nvidia/." "$root/"
        # the mdevs of the fixture host, to compare after each step
        (cd "$root" && find sys -printf '%p %y %l\n' | sort) > "$BATS_TEST_TMPDIR/sys.before"
}

dpkg_root() {
        # chrootless: the maintainer scripts run here with DPKG_ROOT=$root;
        # the root has no libc6 &c. in its database, hence --force-depends.
        dpkg --root="$root" --force-script-chrootless --force-depends --force-not-root \
                --log=/dev/null "$@"
}

sys_unchanged() {
        (cd "$root" && find sys -printf '%p %y %l\n' | sort) | diff -u "$BATS_TEST_TMPDIR/sys.before" -
}

@test "the package holds what meson install installs, nothing else" {
        # the tree meson installs, from a build of the same source
        build="$BATS_TEST_TMPDIR/build"
        meson setup "$build" "$MH_SOURCE_DIR" --prefix=/usr --libexecdir=libexec -Dtests=false > /dev/null
        meson compile -C "$build" > /dev/null
        meson install -C "$build" --no-rebuild --destdir "$BATS_TEST_TMPDIR/dest" > /dev/null
        (cd "$BATS_TEST_TMPDIR/dest" && find . ! -type d | sed 's|^\./||' | sort) > "$BATS_TEST_TMPDIR/meson.files"
        # the package's files, without Debian's own (copyright, changelog,
        # lintian overrides, if any) and
        # with man pages and docs compressed by dh_compress named as meson
        # names them
        dpkg-deb -c "$MH_DEB" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./||' |
                grep -vxE 'usr/share/doc/mdev-hooks/(copyright|changelog\.gz)|usr/share/lintian/overrides/mdev-hooks' | sed 's|\.gz$||' | sort > "$BATS_TEST_TMPDIR/deb.files"
        diff -u "$BATS_TEST_TMPDIR/meson.files" "$BATS_TEST_TMPDIR/deb.files"
        grep -qx 'etc/libvirt/hooks/qemu.d/mdev-hooks' "$BATS_TEST_TMPDIR/deb.files"
        grep -qx 'usr/share/bash-completion/completions/mdev-hooks' "$BATS_TEST_TMPDIR/deb.files"
        grep -qE '^(usr/)?lib/udev/rules.d/60-mdev-hooks.rules$' "$BATS_TEST_TMPDIR/deb.files"
}

@test "its dependencies come from the libraries it links (shlibs), not by hand" {
        run dpkg-deb -f "$MH_DEB" Depends
        echo "$output"
        [[ "$output" == *libc6* ]]
        [[ "$output" == *libxml2* ]]
        [[ "$output" == *libinih1* ]]
        [[ "$output" == *libjson-c5* ]]
        [[ "$output" == *libudev1* ]]
        [[ "$output" == *libvirt0* ]]
        # and the hook's private module is offered to nobody: no shlibs, no ldconfig trigger
        ! dpkg-deb --ctrl-tarfile "$MH_DEB" | tar -t | grep -qE '(shlibs|triggers|symbols)$'
        # no library of its own stands in for a system one
        run dpkg-deb -c "$MH_DEB"
        ! grep -q 'libicuuc' <<< "$output" || false
}

@test "install: the hook, its link, the CLI; the record directory is made 0700" {
        run dpkg_root -i "$MH_DEB"
        echo "$output"
        [ "$status" -eq 0 ]
        # nothing said about libvirtd: this is not the running system
        [[ "$output" != *restart* ]]
        [ -x "$root/usr/libexec/mdev-hooks/mdev-hooks-qemu" ]
        [ "$(readlink "$root/etc/libvirt/hooks/qemu.d/mdev-hooks")" = /usr/libexec/mdev-hooks/mdev-hooks-qemu ]
        [ -x "$root/usr/bin/mdev-hooks" ]
        [ -f "$root/etc/mdev-hooks/mdev-hooks.conf.example" ]
        [ "$(stat -c %a "$root/var/lib/mdev-hooks")" = 700 ]
        # the installed CLI reads this host (the fixture) as it is
        MDEV_HOOKS_ROOT="$root" run "$root/usr/bin/mdev-hooks" list
        [ "$status" -eq 0 ]
        [[ "$output" == *"1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01  0000:84:00.0  nvidia-35  assigned"* ]]
        sys_unchanged
}

@test "remove keeps the record and the config; purge removes them; no mdev is touched" {
        dpkg_root -i "$MH_DEB"
        records=$(ls "$root/var/lib/mdev-hooks" | sort)
        [ -n "$records" ]
        run dpkg_root -r mdev-hooks
        [ "$status" -eq 0 ]
        [ ! -e "$root/usr/bin/mdev-hooks" ]
        [ ! -e "$root/etc/libvirt/hooks/qemu.d/mdev-hooks" ]
        [ "$(ls "$root/var/lib/mdev-hooks" | sort)" = "$records" ]
        [ -f "$root/etc/mdev-hooks/mdev-hooks.conf" ]
        # the example is a conffile: kept until purge, as dpkg does
        [ -f "$root/etc/mdev-hooks/mdev-hooks.conf.example" ]
        sys_unchanged
        run dpkg_root --purge mdev-hooks
        [ "$status" -eq 0 ]
        [ ! -e "$root/var/lib/mdev-hooks" ]
        [ ! -e "$root/etc/mdev-hooks" ]
        sys_unchanged
}

@test "reinstall after remove finds the record as it was" {
        dpkg_root -i "$MH_DEB"
        dpkg_root -r mdev-hooks
        dpkg_root -i "$MH_DEB"
        MDEV_HOOKS_ROOT="$root" run "$root/usr/bin/mdev-hooks" list
        [[ "$output" == *"nvidia-35  assigned  created  web1"* ]]
}

# Skips, with unshare's reason, where no private mount namespace can be made
# (no CAP_SYS_ADMIN; a chroot whose / is not a mount point).
need_mount_namespace() {
        command -v unshare > /dev/null || skip "unshare is not installed"
        local why
        why=$(unshare -m --propagation unchanged sh -c 'mount --make-rprivate /' 2>&1) ||
                skip "cannot make a private mount namespace here: ${why:-unshare -m failed}"
}

# In a mount namespace where /run and /var/lib are private tmpfs, with
# stand-ins for udevadm and systemctl first on PATH that log their arguments
# (systemctl says libvirtd is active). Runs the package's postinst or postrm with ARGS.
# usage: run_script postinst|postrm ARGS...
run_script() {
        local script="$1"
        shift
        ctl="$BATS_TEST_TMPDIR/ctl"
        mkdir -p "$ctl"
        dpkg-deb -e "$MH_DEB" "$ctl"
        mkdir -p "$BATS_TEST_TMPDIR/bin"
        cat > "$BATS_TEST_TMPDIR/bin/udevadm" <<-'EOF'
	#!/bin/sh
	echo "udevadm $*" >> /run/calls
	EOF
        cat > "$BATS_TEST_TMPDIR/bin/systemctl" <<-'EOF'
	#!/bin/sh
	echo "systemctl $*" >> /run/calls
	case "$*" in *libvirtd.service*) exit 0 ;; esac
	exit 3
	EOF
        chmod +x "$BATS_TEST_TMPDIR/bin/udevadm" "$BATS_TEST_TMPDIR/bin/systemctl"
        unshare -m --propagation unchanged sh -ec '
                mount --make-rprivate /
                mount -t tmpfs tmpfs /run
                mount -t tmpfs tmpfs /var/lib
                mkdir -p /run/udev /run/systemd/system
                bin=$1 script=$2; shift 2
                PATH="$bin:$PATH" DPKG_ROOT= "$script" "$@"
                echo "--- calls"
                cat /run/calls 2>/dev/null || true
                echo "--- record"
                stat -c %a /var/lib/mdev-hooks 2>/dev/null || echo none
        ' sh "$BATS_TEST_TMPDIR/bin" "$ctl/$script" "$@"
}

@test "postinst on a running system: record made, rules reloaded, mdevs and PFs replayed, one line for libvirtd" {
        need_mount_namespace
        run run_script postinst configure ""
        echo "$output"
        [ "$status" -eq 0 ]
        # exactly the events 60-mdev-hooks.rules acts on that can be replayed
        grep -qx 'udevadm control --reload-rules' <<< "$output"
        grep -qx 'udevadm trigger --action=bind --subsystem-match=mdev' <<< "$output"
        grep -qx 'udevadm trigger --action=bind --subsystem-match=pci --attr-match=sriov_totalvfs' <<< "$output"
        grep -q 'ENV{MDEV_STATE}' "$MH_SOURCE_DIR/udev-rules/60-mdev-hooks.rules.in"
        grep -q 'SUBSYSTEM=="mdev", ACTION=="add|bind|remove"' "$MH_SOURCE_DIR/udev-rules/60-mdev-hooks.rules.in"
        grep -q 'SUBSYSTEM=="pci", ACTION=="add|bind", ATTR{sriov_totalvfs}' "$MH_SOURCE_DIR/udev-rules/60-mdev-hooks.rules.in"
        # libvirtd is not restarted; one line says it must be
        ! grep -q 'systemctl restart\|systemctl try-restart\|systemctl reload' <(sed -n '/^--- calls/,/^--- record/p' <<< "$output")
        [ "$(grep -c '^mdev-hooks: restart libvirtd' <<< "$output")" -eq 1 ]
        [ "$(sed -n '/^--- record/{n;p}' <<< "$output")" = 700 ]
}

@test "postinst on upgrade says nothing about libvirtd (the hook was there at its start)" {
        need_mount_namespace
        run run_script postinst configure 0.0.9
        [ "$status" -eq 0 ]
        [[ "$output" != *"restart libvirtd"* ]]
        grep -qx 'udevadm control --reload-rules' <<< "$output"
}

@test "postrm remove reloads the rules and touches nothing else" {
        need_mount_namespace
        run run_script postrm remove
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(sed -n '/^--- calls/,/^--- record/p' <<< "$output" | grep -c .)" -eq 3 ]
        grep -qx 'udevadm control --reload-rules' <<< "$output"
        ! grep -q 'trigger' <<< "$output"
}
