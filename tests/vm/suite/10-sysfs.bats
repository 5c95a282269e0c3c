# Group 1, sysfs level: the simulator's mtty transcript (tests/sim/
# mtty-transcript.sh) run on the real kernel's mtty sample must print
# exactly tests/sim/mtty-transcript.expected, the file the simulator's own
# test compares against. Where they differ, the kernel is right.

load helpers

setup_file() {
        vm_mtty_load
}

@test "sysfs: mtty.ko loads and registers the parent mtty with types mtty-1 and mtty-2" {
        [ -d /sys/class/mdev_bus/mtty/mdev_supported_types/mtty-1 ]
        [ -d /sys/class/mdev_bus/mtty/mdev_supported_types/mtty-2 ]
        [ "$(cat /sys/class/mdev_bus/mtty/mdev_supported_types/mtty-1/device_api)" = vfio-pci ]
}

@test "sysfs: the real mtty's transcript equals the simulator's expected transcript" {
        [ -f /mh/sim/mtty-transcript.sh ] || skip "tests/sim/mtty-transcript.sh is not in this checkout"
        sh /mh/sim/mtty-transcript.sh /sys > "$MH_VM_OUT/mtty-transcript.real" 2> "$MH_VM_OUT/mtty-transcript.stderr"
        run diff -u /mh/sim/mtty-transcript.expected "$MH_VM_OUT/mtty-transcript.real"
        echo "$output"
        [ "$status" -eq 0 ]
}

@test "sysfs: the transcript left no mdev behind" {
        [ -z "$(ls /sys/bus/mdev/devices)" ]
}
