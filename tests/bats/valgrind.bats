#!/usr/bin/env bats
# Every program under valgrind's memcheck, on the simulator, doing real work:
# no invalid access, no uninitialised use, no leak of any kind (definite,
# indirect, possible or still reachable), no fd left open at exit.
# Skipped in the sanitizer build (ASan and valgrind cannot share a process).

load hook-helpers

setup_file() {
        if ! command -v valgrind > /dev/null; then
                skip "valgrind is not installed (scripts/setup installs it)"
        fi
}

setup() {
        command -v valgrind > /dev/null || skip "valgrind is not installed"
        if nm -A "$MH_CLI" 2>/dev/null | grep -q __asan_init || ldd "$MH_CLI" | grep -q libasan; then
                skip "sanitizer build: valgrind runs on the plain build"
        fi
        sim_mount nvidia-timesliced
        config_write <<-EOF2
	[devices]
	enabled_mdev_types = nvidia-35, nvidia-36
	[mdev_nvidia-35]
	device_addresses = $P84, $P85
	[mdev_nvidia-36]
	[hooks]
	release = remove
	EOF2
        VG_HOOK="$MH_QEMU_HOOK"
        VG_LOG="$BATS_TEST_TMPDIR/vg"
        mkdir -p "$VG_LOG"
}

# vg NAME PROGRAM ARGS...: runs PROGRAM under memcheck (following any program
# it executes, such as the CLI's reconcile), stdin passed on; fails on any error valgrind reports.
# The program gets stdin, stdout and stderr only: valgrind 3.24 (Debian 13)
# counts every descriptor open at exit as an error, even one inherited
# (bats's, meson's), where 3.19 (Debian 12) marked those "inherited".
# A subshell, so that the test's own descriptors stay open.
vg() (
        local name="$1" fd
        shift
        for fd in $(ls /proc/$BASHPID/fd); do
                [ "$fd" -gt 2 ] || continue
                eval "exec $fd>&-" 2>/dev/null || true
        done
        valgrind --quiet --error-exitcode=99 --trace-children=yes --num-callers=40 \
                --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all \
                --suppressions="$MH_SOURCE_DIR/tests/valgrind.supp" \
                --track-fds=yes --log-file="$VG_LOG/$name.%p" "$@"
)

# Asserts no valgrind log holds an error or an fd left open beyond stdio.
assert_clean() {
        local f bad=0
        for f in "$VG_LOG"/*; do
                [ -s "$f" ] || continue
                # An fd open at exit that the program did not inherit is a leak
                # (bats's own descriptors are inherited and reported as such).
                if grep -qE 'ERROR SUMMARY: [1-9]|definitely lost|indirectly lost|possibly lost|still reachable|Invalid|uninitialised' "$f" ||
                        awk '/Open (file descriptor|AF_UNIX socket) [0-9]+/ { fd = 1; next }
                             fd && /inherited from parent/ { fd = 0; next }
                             fd && /==[0-9]+== *$/ { next }
                             fd { bad = 1 } END { exit !bad }' "$f"; then
                        echo "--- $f"; cat "$f"; bad=1
                fi
        done
        [ "$bad" -eq 0 ]
}

@test "the CLI's types, list, inventory and check-config are clean under valgrind" {
        prepare web1 "$U1,type=nvidia-35"
        vg types "$MH_CLI" types
        vg types-json "$MH_CLI" types --json
        vg list "$MH_CLI" list
        vg list-json "$MH_CLI" list --json
        vg inventory "$MH_CLI" inventory --json
        vg placement "$MH_CLI" inventory --placement --hostname h
        vg check "$MH_CLI" check-config
        vg metrics "$MH_CLI" metrics
        # placement sync's failure path (its work is checked in placement.bats)
        run vg placement-down "$MH_CLI" placement sync --url http://127.0.0.1:1 --token x --host h
        [ "$status" -eq 1 ]
        assert_clean
}

@test "a bad config is refused cleanly under valgrind" {
        printf '[devices]\nenabled_mdev_types = nvidia-35\n[mdev_nvidia-35]\nmax_instances = zero\nbogus = 1\n' |
                config_write
        run vg bad "$MH_CLI" check-config
        [ "$status" -eq 2 ]
        assert_clean
}

@test "the hook's prepare, release, migrate and no-op paths are clean under valgrind" {
        domxml web1 "$U1,type=nvidia-35" "$U2,type=nvidia-36" > "$BATS_TEST_TMPDIR/web1.xml"
        domxml plain > "$BATS_TEST_TMPDIR/plain.xml"
        vg prepare "$VG_HOOK" web1 prepare begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$(mdev_type "$U1")" = nvidia-35 ]
        vg reconnect "$VG_HOOK" web1 reconnect begin - < "$BATS_TEST_TMPDIR/web1.xml"
        vg release "$VG_HOOK" web1 release end shutdown < "$BATS_TEST_TMPDIR/web1.xml"
        [ ! -e "$SIM_SYS/bus/mdev/devices/$U1" ]
        vg migrate "$VG_HOOK" web1 migrate begin - < "$BATS_TEST_TMPDIR/web1.xml" > /dev/null
        # The same UUIDs for another guest: rewritten (domxml_write()).
        sed 's|<name>web1</name>|<name>web2</name>|' "$BATS_TEST_TMPDIR/web1.xml" > "$BATS_TEST_TMPDIR/web2.xml"
        vg migrate-rewrite "$VG_HOOK" web2 migrate begin - < "$BATS_TEST_TMPDIR/web2.xml" > "$BATS_TEST_TMPDIR/web2.out"
        grep -q "<name>web2</name>" "$BATS_TEST_TMPDIR/web2.out"
        ! grep -q "$U1" "$BATS_TEST_TMPDIR/web2.out" || false
        vg release3 "$VG_HOOK" web2 release end failed < "$BATS_TEST_TMPDIR/web2.out"
        vg release2 "$VG_HOOK" web1 release end failed < "$BATS_TEST_TMPDIR/web1.xml"
        vg noop "$VG_HOOK" plain prepare begin - < "$BATS_TEST_TMPDIR/plain.xml"
        vg started "$VG_HOOK" web1 started begin - < "$BATS_TEST_TMPDIR/web1.xml"
        assert_clean
}

@test "a large XML's prepare, release and rewriting migrate are clean under valgrind" {
        local disk="    <disk type='file' device='disk'><source file='/var/lib/libvirt/images/d.qcow2'/><target dev='vdb' bus='virtio'/></disk>"
        # past 512 KiB, and the same with a comment
        domxml big "$U1,type=nvidia-35" | awk -v d="$disk" '{ print } /<devices>/ { for (i = 0; i < 5000; i++) print d }' \
                > "$BATS_TEST_TMPDIR/big.xml"
        [ "$(stat -c %s "$BATS_TEST_TMPDIR/big.xml")" -ge 524288 ]
        sed 's|<metadata>|<metadata><!-- by hand -->|' "$BATS_TEST_TMPDIR/big.xml" > "$BATS_TEST_TMPDIR/big.c.xml"
        vg prepare-big "$VG_HOOK" big prepare begin - < "$BATS_TEST_TMPDIR/big.xml"
        [ "$(mdev_type "$U1")" = nvidia-35 ]
        vg release-big "$VG_HOOK" big release end destroyed < "$BATS_TEST_TMPDIR/big.xml"
        vg prepare-declined "$VG_HOOK" big prepare begin - < "$BATS_TEST_TMPDIR/big.c.xml"
        [ "$(mdev_type "$U1")" = nvidia-35 ]
        # U1 taken by big: another guest's migrate must rewrite it
        sed 's|<name>big</name>|<name>big2</name>|' "$BATS_TEST_TMPDIR/big.xml" > "$BATS_TEST_TMPDIR/big2.xml"
        vg migrate-rewrite "$VG_HOOK" big2 migrate begin - < "$BATS_TEST_TMPDIR/big2.xml" > "$BATS_TEST_TMPDIR/big2.out"
        ! grep -q "$U1" "$BATS_TEST_TMPDIR/big2.out" || false
        assert_clean
}

@test "a refused prepare (no capacity, hostile XML) is clean under valgrind" {
        # max_instances = 1 on a GPU of 16: as in Nova, the parent's 16 do not
        # fit under the cap, so it gets none, and a prepare finds no room.
        printf '[devices]\nenabled_mdev_types = nvidia-35\n[mdev_nvidia-35]\ndevice_addresses = %s\nmax_instances = 1\n' "$P84" | config_write
        domxml web2 "$U2,type=nvidia-35" > "$BATS_TEST_TMPDIR/web2.xml"
        run vg full "$VG_HOOK" web2 prepare begin - < "$BATS_TEST_TMPDIR/web2.xml"
        [ "$status" -eq 1 ]
        printf '<!DOCTYPE d [<!ENTITY a "aaaa">]><domain><name>&a;</name><devices><hostdev mode="subsystem" type="mdev"/></devices></domain>' \
                > "$BATS_TEST_TMPDIR/evil.xml"
        run vg evil "$VG_HOOK" evil prepare begin - < "$BATS_TEST_TMPDIR/evil.xml"
        [ "$status" -eq 1 ]
        assert_clean
}

@test "the udev helper's events are clean under valgrind" {
        prepare web1 "$U1,type=nvidia-35"
        local pdev
        pdev=$(readlink -f "$SIM_SYS/bus/pci/devices/$P84")
        pdev=/${pdev#"$SIM_SYS"/}
        sim_new_boot
        ACTION=change SUBSYSTEM=pci DEVPATH="$pdev" MDEV_STATE=registered vg registered "$MH_UDEV" "$P84"
        ACTION=change SUBSYSTEM=pci DEVPATH="$pdev" MDEV_STATE=unregistered vg unregistered "$MH_UDEV" "$P84"
        ACTION=remove SUBSYSTEM=mdev DEVPATH="$pdev/$U1" vg remove "$MH_UDEV" "$U1"
        ACTION=add SUBSYSTEM=pci DEVPATH="$pdev" vg pf "$MH_UDEV" "$P84"
        assert_clean
}

@test "attach and detach, definition and --live (refused by the test driver), are clean under valgrind" {
        export LIBVIRT_DEFAULT_URI=test:///default
        cat > "$BATS_TEST_TMPDIR/g.xml" <<-EOF2
	<domain type='test'>
	  <name>web1</name>
	  <metadata><nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1"/></metadata>
	  <memory unit='KiB'>1048576</memory>
	  <os><type arch='x86_64'>hvm</type></os>
	  <devices/>
	</domain>
	EOF2
        run vg attach "$MH_BUILD_DIR/tests/virt-shell" define "$BATS_TEST_TMPDIR/g.xml" \; \
                mdev-hooks attach web1 nvidia-35 --count 2 \; mdev-hooks attach web1 nvidia-45 \; \
                mdev-hooks detach web1 --all \; start web1 \; mdev-hooks attach web1 nvidia-35 --live \; \
                mdev-hooks detach web1 "$U1" --live
        echo "$output"
        assert_clean
        [ "$status" -eq 0 ]
        [ "$(grep -c '^\[exit 0\]' <<< "$output")" -eq 2 ]
        [ "$(grep -c '^\[exit 1\]' <<< "$output")" -eq 3 ]
}
