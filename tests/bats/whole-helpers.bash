# shellcheck shell=bash
# What the tests of the backends of VFs given whole (amd-backend.bats,
# xe-backend.bats) share: a guest with managed PCI hostdevs, its prepare,
# and a refusal's promises.

# axml NAME [pci=ADDR[,type=T] | UUID,type=T]...: vxml's guest
# (hook-helpers.bash) with every PCI hostdev managed (libvirt binds the VF
# to vfio-pci), its <mh:vgpu> entry with type= when given.
axml() {
        local name="$1" spec
        local -a specs=()
        shift
        for spec in "$@"; do
                [[ "$spec" != pci=* ]] || spec+=",managed"
                specs+=("$spec")
        done
        vxml "$name" "${specs[@]}"
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
