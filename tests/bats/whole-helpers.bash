# shellcheck shell=bash
# What the tests of the backends of VFs given whole (amd-backend.bats,
# xe-backend.bats) share: a guest with managed PCI hostdevs, its prepare,
# and a refusal's promises.

# axml NAME [pci=ADDR[,type=T] | UUID,type=T]...: a guest with a managed
# PCI hostdev per VF (libvirt binds it to vfio-pci) and an <mh:vgpu> entry
# (with type= when given), an mdev hostdev per UUID.
axml() {
        local name="$1" spec key type
        shift
        printf "<domain type='kvm'>\n  <name>%s</name>\n  <uuid>%s</uuid>\n" "$name" \
                "$(printf '%s' "$name" | md5sum | sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12}).*/\1-\2-4\3-8\4-\5/')"
        printf "  <metadata>\n    <mh:mdevs xmlns:mh=\"http://mdev-hooks.org/xmlns/domain/1.0\">\n"
        for spec in "$@"; do
                key="${spec%%,*}" type=""
                [[ "$spec" != *,type=* ]] || type="${spec#*,type=}"
                if [[ "$key" == pci=* ]]; then
                        printf "      <mh:vgpu pci=\"%s\"%s/>\n" "${key#pci=}" "${type:+ type=\"$type\"}"
                else
                        printf "      <mh:mdev uuid=\"%s\" type=\"%s\"/>\n" "$key" "$type"
                fi
        done
        printf "    </mh:mdevs>\n  </metadata>\n  <devices>\n"
        for spec in "$@"; do
                key="${spec%%,*}"
                if [[ "$key" == pci=* ]]; then
                        key="${key#pci=}"
                        printf "    <hostdev mode='subsystem' type='pci' managed='yes'>\n      <source>\n"
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

aprepare() {
        local name="$1"
        shift
        axml "$name" "$@" > "$BATS_TEST_TMPDIR/$name.xml"
        hook "$name" prepare begin - < "$BATS_TEST_TMPDIR/$name.xml"
}

# arefused NAME SPEC...: prepare is refused in one line, with no sysfs write
# and no record changed.
arefused() {
        local before
        before=$(ls "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" 2>/dev/null | sort | xargs -r -I{} cat "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/{}")
        sim_counters_reset
        run aprepare "$@"
        echo "$output"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: $1: "* ]]
        [ "$(sim_counter_total writes)" -eq 0 ]
        [ "$(ls "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" 2>/dev/null | sort | xargs -r -I{} cat "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/{}")" = "$before" ]
}
