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

# xe_vfio_pci_installed [RELEASE]: the running kernel (the root's
# /proc/sys/kernel/osrelease) has xe-vfio-pci installed: its "vfio_pci:"
# aliases in /lib/modules/RELEASE/modules.alias, as depmod writes them from
# its ID table (kernel 6.19, drivers/vfio/pci/xe/main.c: INTEL_PTL_IDS,
# INTEL_WCL_IDS, INTEL_BMG_IDS of include/drm/intel/pciids.h; abridged),
# beside another variant driver's. Without it, no xe VF can migrate.
xe_vfio_pci_installed() {
        local rel="${1:-6.19.0-sim}" id
        mkdir -p "$MDEV_HOOKS_ROOT/proc/sys/kernel" "$MDEV_HOOKS_ROOT/lib/modules/$rel"
        printf '%s\n' "$rel" > "$MDEV_HOOKS_ROOT/proc/sys/kernel/osrelease"
        {
                echo "alias vfio_pci:v000015B3d0000101Esv*sd*bc*sc*i* mlx5_vfio_pci"
                for id in B080 B081 B082 B083 B084 B085 B086 B087 B08F B090 B0A0 B0B0 FD80 FD81 \
                        E202 E209 E20B E20C E20D E210 E211 E212 E215 E216; do
                        echo "alias vfio_pci:v00008086d0000${id}sv*sd*bc*sc*i* xe_vfio_pci"
                done
                echo "alias pci:v00008086d000056C0sv*sd*bc03sc*i* xe"
        } > "$MDEV_HOOKS_ROOT/lib/modules/$rel/modules.alias"
}

# xe_vfio_pci_absent [RELEASE]: the running kernel has no xe-vfio-pci (an
# older kernel, or one built without CONFIG_XE_VFIO_PCI).
xe_vfio_pci_absent() {
        local rel="${1:-6.18.0-sim}"
        mkdir -p "$MDEV_HOOKS_ROOT/proc/sys/kernel" "$MDEV_HOOKS_ROOT/lib/modules/$rel"
        printf '%s\n' "$rel" > "$MDEV_HOOKS_ROOT/proc/sys/kernel/osrelease"
        echo "alias vfio_pci:v000015B3d0000101Esv*sd*bc*sc*i* mlx5_vfio_pci" > "$MDEV_HOOKS_ROOT/lib/modules/$rel/modules.alias"
}
