# Helpers for tests that need libvirt's guests without a daemon (reconcile,
# crash safety): node files for libvirt's test driver made of the guests in
# tests/fixtures/libvirt/guests/, and a snapshot of record + sysfs. The
# record and the config are written with common.bash's helpers.
#
# In a bats file:   load common; load ../sim/sim; load libvirt-node

# The test driver's namespace: <test:runstate>5</test:runstate> is shut off
# (VIR_DOMAIN_SHUTOFF); without it every domain of a node file is running.
_MH_TEST_NS="http://libvirt.org/schemas/domain/test/1.0"

# node_xml OUT GUEST[:off|:transient]...: writes a node file for libvirt's
# test driver with the guests of tests/fixtures/libvirt/guests/, each running
# (default), defined and shut off (:off) or running and transient
# (:transient), and prints its URI (test:///OUT).
node_xml() {
        local out="$1" g name state
        shift
        {
                echo "<node>"
                for g in "$@"; do
                        name="${g%%:*}"
                        state=running
                        [ "$name" != "$g" ] && state="${g#*:}"
                        case "$state" in
                        running) cat "$MH_GUESTS/$name.xml" ;;
                        off) sed "s#</name>#</name>\n  <test:runstate xmlns:test='$_MH_TEST_NS'>5</test:runstate>#" \
                                "$MH_GUESTS/$name.xml" ;;
                        transient) sed "s#</name>#</name>\n  <test:transient xmlns:test='$_MH_TEST_NS'/>#" \
                                "$MH_GUESTS/$name.xml" ;;
                        *) echo "node_xml: unknown state '$state'" >&2; return 1 ;;
                        esac
                done
                echo "</node>"
        } > "$out" || return 1
        printf 'test://%s\n' "$(realpath "$out")"
}

# guest_uuid NAME: the UUID of a fixture guest.
guest_uuid() {
        sed -n 's#.*<uuid>\(.*\)</uuid>.*#\1#p' "$MH_GUESTS/$1.xml" | head -n1
}

# host_snapshot: the record (every file, whole) and the mdevs in sysfs with
# their parent and type, for "nothing changed" comparisons.
host_snapshot() {
        local u d="$MDEV_HOOKS_ROOT/var/lib/mdev-hooks"
        echo "# records"
        for u in $(records); do
                echo "## $u"
                cat "$d/$u"
        done
        echo "# sysfs"
        for u in $(ls "$SIM_SYS/bus/mdev/devices" | sort); do
                echo "$u $(basename "$(readlink -f "$SIM_SYS/bus/mdev/devices/$u/..")") $(basename "$(readlink "$SIM_SYS/bus/mdev/devices/$u/mdev_type")")"
        done
}
