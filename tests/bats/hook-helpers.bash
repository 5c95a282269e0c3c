# Helpers for the qemu hook's bats tests (hook-*.bats): domain XML as libvirt
# formats it, the hook run exactly as libvirt runs it, and checks of the
# record against sysfs. Loads common (the record and config helpers) and
# ../sim/sim (the simulator, and the teardown that unmounts it).

bats_require_minimum_version 1.5.0

load common
load ../sim/sim

# The hook tests' teardown: what the test left running (stop_started), then
# the simulator's mount.
teardown() {
        stop_started
        sim_umount
}

U1=b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01
U2=b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b02
U3=b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b03
U4=b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b04
P84=0000:84:00.0
P85=0000:85:00.0
P86=0000:86:00.0
P87=0000:87:00.0

# domxml NAME [SPEC...]: prints a domain XML with one mdev hostdev per SPEC,
# SPEC = UUID[,type=T][,class=C][,parent=P] (the attributes become the
# domain's mdev-hooks metadata entry for that UUID).
domxml() {
        local name="$1" spec uuid attrs a
        shift
        printf "<domain type='kvm'>\n  <name>%s</name>\n  <uuid>%s</uuid>\n" "$name" \
                "$(printf '%s' "$name" | md5sum | sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12}).*/\1-\2-4\3-8\4-\5/')"
        printf "  <memory unit='KiB'>1048576</memory>\n  <metadata>\n"
        printf "    <mh:mdevs xmlns:mh=\"http://mdev-hooks.org/xmlns/domain/1.0\">\n"
        for spec in "$@"; do
                uuid="${spec%%,*}"
                [ "$spec" = "$uuid" ] && continue
                attrs=""
                IFS=, read -ra a <<< "${spec#*,}"
                for kv in "${a[@]}"; do attrs+=" ${kv%%=*}=\"${kv#*=}\""; done
                printf "      <mh:mdev uuid=\"%s\"%s/>\n" "$uuid" "$attrs"
        done
        printf "    </mh:mdevs>\n  </metadata>\n  <os>\n    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>\n  </os>\n  <devices>\n"
        printf "    <emulator>/usr/bin/qemu-system-x86_64</emulator>\n"
        for spec in "$@"; do
                printf "    <hostdev mode='subsystem' type='mdev' managed='no' model='vfio-pci' display='off'>\n"
                printf "      <source>\n        <address uuid='%s'/>\n      </source>\n" "${spec%%,*}"
                printf "    </hostdev>\n"
        done
        printf "  </devices>\n</domain>\n"
}

# hook GUEST OP SUBOP EXTRA < xml: the hook exactly as libvirt runs it.
hook() {
        "$MH_QEMU_HOOK" "$@"
}

# prepare NAME [SPEC...]: writes NAME's XML to $BATS_TEST_TMPDIR/NAME.xml
# and runs "NAME prepare begin -" with it on stdin.
prepare() {
        local name="$1"
        shift
        domxml "$name" "$@" > "$BATS_TEST_TMPDIR/$name.xml"
        hook "$name" prepare begin - < "$BATS_TEST_TMPDIR/$name.xml"
}

# release NAME [REASON]: "NAME release end REASON" with NAME's last XML.
# libvirt 11 passes why the guest stopped (destroyed, saved, migrated, ...:
# tests/vm/libvirt11-hook-transcript.md), so that is the default; older
# libvirt passed "-", which tests still pass explicitly.
release() {
        hook "$1" release end "${2:-destroyed}" < "$BATS_TEST_TMPDIR/$1.xml"
}

# mdev_parent UUID / mdev_type UUID: as sysfs shows them.
mdev_parent() {
        basename "$(dirname "$(readlink -f "$SIM_SYS/bus/mdev/devices/$1")")"
}
mdev_type() {
        basename "$(readlink "$SIM_SYS/bus/mdev/devices/$1/mdev_type")"
}
mdev_exists() {
        [ -e "$SIM_SYS/bus/mdev/devices/$1" ]
}

# mdev_absent UUID: fails the test when the mdev exists. (Write this, not
# "! mdev_exists": bats does not fail a test on a negated command that
# succeeds, since "!" switches errexit off for it.)
mdev_absent() {
        [ ! -e "$SIM_SYS/bus/mdev/devices/$1" ]
}

# assert_record_matches_sysfs: every record of a held mdev names an existing
# mdev with its parent and type, and every mdev in sysfs that a guest holds
# has exactly one record.
assert_record_matches_sysfs() {
        local u
        for u in $(records); do
                case "$(record_get "$u" state)" in
                assigned | incoming | free)
                        mdev_exists "$u" || { echo "record $u without mdev"; return 1; }
                        [ "$(record_get "$u" parent)" = "$(mdev_parent "$u")" ] || { echo "parent of $u differs"; return 1; }
                        [ "$(record_get "$u" type)" = "$(mdev_type "$u")" ] || { echo "type of $u differs"; return 1; }
                        ;;
                esac
        done
        for u in $(sim_mdevs); do
                [ -f "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/$u" ] || { echo "mdev $u without record"; return 1; }
        done
}

# two_types_conf: nvidia-35 on 84 and 85, nvidia-36 on 86, no default
# type: an mdev without a metadata entry naming its type has none.
two_types_conf() {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35, nvidia-36

	[mdev_nvidia-35]
	device_addresses = $P84, $P85

	[mdev_nvidia-36]
	device_addresses = $P86
	EOF
}

# hook_setup TOPOLOGY: a simulator root for this test.
hook_setup() {
        sim_mount "$1"
}

# --- migration between two roots: A (source) and B (destination), XML in $T --

# migrate_to_b NAME [OP]: "NAME OP begin -" (OP: migrate, or restore) on B
# with NAME's XML from A ($T/NAME.xml). Sets status/output (stdout)/stderr,
# and writes the XML that libvirt continues with on B to $T/NAME.b.xml,
# which must pass prepare's checks.
migrate_to_b() {
        sim_use "$B"
        run --separate-stderr hook "$1" "${2:-migrate}" begin - < "$T/$1.xml"
        if [ -n "$output" ]; then
                printf '%s\n' "$output" > "$T/$1.b.xml"
                assert_prepare_accepts "$T/$1.b.xml" "$T/$1.xml"
        else
                cp "$T/$1.xml" "$T/$1.b.xml"
        fi
}

# assert_prepare_accepts OUT IN: a property of every rewrite: the XML that
# migrate or restore printed passes prepare's own checks (domxml_parse()),
# with as many mdev hostdevs as the incoming XML, each with the UUID the
# output's hostdev names.
assert_prepare_accepts() {
        local got
        got="$("$MH_BUILD_DIR/tests/unit/domxml-check" < "$1")" || {
                echo "prepare would refuse the XML that migrate printed ($1)"
                return 1
        }
        [ "$got" = "$(xml_uuids "$1")" ] || { echo "hostdevs differ: $got"; return 1; }
        [ "$(printf '%s' "$got" | grep -c .)" -eq "$(xml_uuids "$2" | grep -c .)" ]
}

# The source UUIDs of the hostdevs in an XML file, in document order.
xml_uuids() {
        grep -o "<address uuid=['\"][0-9a-f-]*" "$1" | sed -E "s/.*uuid=['\"]//"
}

# loaded_by LOGPREFIX: the shared objects the hook's process loaded, from
# the dynamic loader's own record (LD_DEBUG=files LD_DEBUG_OUTPUT=LOGPREFIX).
loaded_by() {
        cat "$1".* | sed -nE 's/^ *[0-9]+:[[:space:]]+file=([^ ]+).*/\1/p' | sort -u
}

# --- guests with mdevs and PCI vGPUs (vfio.bats, fake-backend.bats) ----------

# vxml NAME SPEC...: a domain XML as libvirt formats it; SPEC is an mdev
# (UUID[,type=T][,class=C]) or a vGPU on a VF: pci=ADDR[,type=T][,class=C]
# (the attributes become its <mh:vgpu> entry; "nometa" leaves the entry out,
# "managed" makes the hostdev managed='yes').
vxml() {
        local name="$1" spec key attrs a kv meta managed
        shift
        printf "<domain type='kvm'>\n  <name>%s</name>\n  <uuid>%s</uuid>\n" "$name" \
                "$(printf '%s' "$name" | md5sum | sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12}).*/\1-\2-4\3-8\4-\5/')"
        printf "  <metadata>\n    <mh:mdevs xmlns:mh=\"http://mdev-hooks.org/xmlns/domain/1.0\">\n"
        for spec in "$@"; do
                IFS=, read -ra a <<< "$spec"
                key="${a[0]}"
                attrs=""
                meta=1
                for kv in "${a[@]:1}"; do
                        case "$kv" in
                        nometa) meta=0 ;;
                        managed) ;;
                        *) attrs+=" ${kv%%=*}=\"${kv#*=}\"" ;;
                        esac
                done
                [ "$meta" = 1 ] || continue
                if [[ "$key" == pci=* ]]; then
                        printf "      <mh:vgpu pci=\"%s\"%s/>\n" "${key#pci=}" "$attrs"
                elif [ -n "$attrs" ]; then
                        printf "      <mh:mdev uuid=\"%s\"%s/>\n" "$key" "$attrs"
                fi
        done
        printf "    </mh:mdevs>\n  </metadata>\n  <devices>\n"
        for spec in "$@"; do
                key="${spec%%,*}"
                if [[ "$key" == pci=* ]]; then
                        key="${key#pci=}"
                        managed=no
                        [[ ",$spec," == *,managed,* ]] && managed=yes
                        printf "    <hostdev mode='subsystem' type='pci' managed='%s'>\n      <source>\n" "$managed"
                        printf "        <address domain='0x%s' bus='0x%s' slot='0x%s' function='0x%s'/>\n" \
                                "${key:0:4}" "${key:5:2}" "${key:8:2}" "${key:11:1}"
                        printf "      </source>\n    </hostdev>\n"
                else
                        printf "    <hostdev mode='subsystem' type='mdev' managed='no' model='vfio-pci'>\n"
                        printf "      <source>\n        <address uuid='%s'/>\n      </source>\n    </hostdev>\n" "$key"
                fi
        done
        printf "  </devices>\n</domain>\n"
}

# vprepare NAME SPEC...: prepare with vxml's XML (kept for release).
vprepare() {
        local name="$1"
        shift
        vxml "$name" "$@" > "$BATS_TEST_TMPDIR/$name.xml"
        hook "$name" prepare begin - < "$BATS_TEST_TMPDIR/$name.xml"
}
