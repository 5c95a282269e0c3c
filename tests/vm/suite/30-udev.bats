# Group 4, the installed udev rules run by the real systemd-udevd when the
# real mtty parent registers (modprobe mtty: "change" with
# MDEV_STATE=registered) and unregisters (rmmod mtty: its mdevs are removed by
# the kernel, then "change" with MDEV_STATE=unregistered).

load helpers

OLD_BOOT=0badb007-0000-4000-8000-000000000001
U1=6d7a0000-0000-4000-8000-000000000001
U2=6d7a0000-0000-4000-8000-000000000002
U3=6d7a0000-0000-4000-8000-000000000003
G1=5a5a0000-0000-4000-8000-0000000000b1

setup_file() {
        udevadm control --reload
}

setup() {
        vm_mtty_load
        vm_remove_all_mdevs
        vm_record_clear
        rmmod mtty
        udevadm settle -t 30
        [ ! -d /sys/class/mdev_bus/mtty ]
}

teardown_file() {
        vm_mtty_load
        vm_remove_all_mdevs
        vm_record_clear
}

# old_record UUID TYPE STATE GUEST BOOT_ID: a record as an earlier boot left it.
# The boot is simulated: a real reboot also empties /run, where the helper
# notes that this boot's sweep of earlier records is done.
old_record() {
        rm -f /run/mdev-hooks/swept
        mkdir -p "$LEDGER"
        chmod 700 "$LEDGER"
        cat > "$LEDGER/$1" <<EOF2
[mdev]
uuid = $1
parent = mtty
type = $2
state = $3
origin = created
guest = $4
guest_uuid =
boot_id = $5
since = 1700000000
remove_pending = no
EOF2
}

# Waits (bounded) for udevd to finish the events of a modprobe/rmmod.
settle() {
        udevadm settle -t 60
}

@test "udev: the installed rules are in udev's rules directory and run the installed helper" {
        rules=/lib/udev/rules.d/60-mdev-hooks.rules
        [ -f "$rules" ] || rules=/usr/lib/udev/rules.d/60-mdev-hooks.rules
        [ -f "$rules" ]
        helper=$(sed -n 's/.*RUN+="\([^ "]*\).*/\1/p' "$rules" | head -1)
        echo "helper: $helper"
        [ -x "$helper" ]
}

@test "udev: modprobe mtty after a reboot drops the free record and marks the guest's record lost" {
        vm_config mtty-1
        old_record "$U1" mtty-1 assigned old1 "$OLD_BOOT"
        old_record "$U2" mtty-1 free "" "$OLD_BOOT"
        modprobe mtty
        settle
        [ -d "$MTTY_TYPES" ]
        cat "$LEDGER"/* || true
        [ "$(vm_record_get "$U1" state)" = lost ]
        [ "$(vm_record_get "$U1" guest)" = old1 ]
        [ ! -e "$LEDGER/$U2" ]
        vm_mdev_gone "$U1"
}

@test "udev: modprobe mtty with recreate = eager makes the guest's mdev again with its UUID and type" {
        vm_config mtty-2 recreate=eager
        old_record "$U1" mtty-2 assigned old1 "$OLD_BOOT"
        modprobe mtty
        settle
        cat "$LEDGER"/* || true
        vm_mdev_exists "$U1"
        [ "$(vm_mdev_type "$U1")" = mtty-2 ]
        [ "$(vm_record_get "$U1" guest)" = old1 ]
        [ "$(vm_record_get "$U1" boot_id)" = "$(cat /proc/sys/kernel/random/boot_id)" ]
}

@test "udev: rmmod mtty marks the guest's mdevs lost" {
        vm_config mtty-1
        modprobe mtty
        settle
        vm_domxml g1 "$G1" "$U1:mtty-1" "$U3:mtty-1" > "$BATS_TEST_TMPDIR/g1.xml"
        run vm_hook g1 prepare begin - < "$BATS_TEST_TMPDIR/g1.xml"
        echo "$output"
        [ "$status" -eq 0 ]
        vm_mdev_exists "$U1"
        [ "$(vm_record_get "$U1" state)" = assigned ]
        rmmod mtty
        settle
        [ ! -d /sys/class/mdev_bus/mtty ]
        cat "$LEDGER"/* || true
        [ "$(vm_record_get "$U1" state)" = lost ]
        [ "$(vm_record_get "$U3" state)" = lost ]
        [ "$(vm_record_get "$U1" guest)" = g1 ]
        run mdev-hooks list --json
        echo "$output"
        [ "$(jq -r --arg u "$U1" '.mdevs[] | select(.uuid == $u) | .state' <<< "$output")" = lost ]
}

@test "udev: an mdev removed by hand while its guest holds it is marked lost" {
        vm_config mtty-1
        modprobe mtty
        settle
        vm_domxml g1 "$G1" "$U1:mtty-1" > "$BATS_TEST_TMPDIR/g1.xml"
        run vm_hook g1 prepare begin - < "$BATS_TEST_TMPDIR/g1.xml"
        [ "$status" -eq 0 ]
        echo 1 > "$MDEV_DEVS/$U1/remove"
        settle
        cat "$LEDGER"/* || true
        [ "$(vm_record_get "$U1" state)" = lost ]
}

# mtty's device appears only together with its registration (modprobe).
# Without parent_wait, a prepare while mtty is unloaded refuses at once.
@test "udev: prepare with mtty unloaded and no parent_wait refuses in one line naming mtty and creates nothing" {
        vm_config mtty-1
        vm_domxml g1 "$G1" "$U1:mtty-1" > "$BATS_TEST_TMPDIR/g1.xml"
        run vm_hook g1 prepare begin - < "$BATS_TEST_TMPDIR/g1.xml"
        echo "$output"
        [ "$status" -ne 0 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: g1: "*mtty* ]]
        [ ! -e "$LEDGER/$U1" ] || [ "$(vm_record_get "$U1" state)" != assigned ]
}

# With parent_wait, the same prepare waits for the module to register mtty
# (woken by the real udev monitor: no MDEV_HOOKS_ROOT here) and then uses it.
@test "udev: prepare waits (parent_wait) for mtty and uses it once modprobe registers it" {
        vm_config mtty-1 parent_wait=120
        vm_domxml g1 "$G1" "$U1:mtty-1" > "$BATS_TEST_TMPDIR/g1.xml"
        [ ! -e /sys/class/mdev_bus/mtty ]
        vm_hook g1 prepare begin - < "$BATS_TEST_TMPDIR/g1.xml" > "$BATS_TEST_TMPDIR/prepare.out" 2>&1 3>&- &
        local pid=$!
        sleep 3
        # Still waiting: nothing made yet.
        kill -0 "$pid"
        [ ! -e "/sys/bus/mdev/devices/$U1" ]
        modprobe mtty
        local rc=0
        wait "$pid" || rc=$?
        cat "$BATS_TEST_TMPDIR/prepare.out"
        [ "$rc" -eq 0 ]
        vm_mdev_exists "$U1"
        [ "$(vm_record_get "$U1" guest)" = g1 ]
        udevadm settle -t 60
        run vm_hook g1 release end - < "$BATS_TEST_TMPDIR/g1.xml"
        vm_mdev_gone "$U1"
}
