# Group 2, the qemu hook as libvirt runs it (argv, domain XML on stdin),
# against the real kernel's mtty: one parent "mtty" with one shared pool of
# 24 ports; mtty-1 takes one port, mtty-2 two. A parent serves one type
# (doc/design.md §3), so each scenario's config enables one of them.

bats_require_minimum_version 1.5.0
load helpers

U1=0e1d2c3b-0000-4000-8000-000000000001
U2=0e1d2c3b-0000-4000-8000-000000000002
U3=0e1d2c3b-0000-4000-8000-000000000003
U4=0e1d2c3b-0000-4000-8000-000000000004
G1=5a5a0000-0000-4000-8000-0000000000a1
G2=5a5a0000-0000-4000-8000-0000000000a2
G3=5a5a0000-0000-4000-8000-0000000000a3

setup_file() {
        vm_mtty_load
}

setup() {
        vm_remove_all_mdevs
        vm_record_clear
}

teardown_file() {
        vm_remove_all_mdevs
        vm_record_clear
}

# xml NAME GUEST_UUID [MDEV_UUID:TYPE...] > $BATS_TEST_TMPDIR/NAME.xml
xml() {
        vm_domxml "$@" > "$BATS_TEST_TMPDIR/$1.xml"
}
prepare() { vm_hook "$1" prepare begin - < "$BATS_TEST_TMPDIR/$1.xml"; }
release() { vm_hook "$1" release end - < "$BATS_TEST_TMPDIR/$1.xml"; }

# Takes N ports of the shared pool with mdevs made by hand (foreign to
# mdev-hooks), N even: mtty-2 mdevs of two ports each.
take_ports() {
        local i
        for i in $(seq $(($1 / 2))); do
                printf '7a7a0000-0000-4000-8000-%012d\n' "$i" > "$MTTY_TYPES/mtty-2/create"
        done
}

@test "hooks: prepare creates the XML's mtty-2 mdev on the real kernel and release removes it" {
        vm_config mtty-2
        xml g1 "$G1" "$U1:mtty-2"
        [ "$(vm_avail mtty-2)" -eq 12 ]
        run prepare g1
        echo "$output"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        vm_mdev_exists "$U1"
        [ "$(vm_mdev_type "$U1")" = mtty-2 ]
        [ "$(vm_avail mtty-2)" -eq 11 ]
        [ "$(vm_record_get "$U1" guest)" = g1 ]
        [ "$(vm_record_get "$U1" state)" = assigned ]
        [ "$(vm_record_get "$U1" origin)" = created ]
        [ "$(vm_record_get "$U1" boot_id)" = "$(cat /proc/sys/kernel/random/boot_id)" ]
        run release g1
        [ "$status" -eq 0 ]
        vm_mdev_gone "$U1"
        [ "$(vm_avail mtty-2)" -eq 12 ]
        [ ! -e "$LEDGER/$U1" ] || [ "$(vm_record_get "$U1" guest)" != g1 ]
}

@test "hooks: two mtty-1 mdevs in one guest are both created and both released" {
        vm_config mtty-1
        xml g1 "$G1" "$U1:mtty-1" "$U2:mtty-1"
        run prepare g1
        echo "$output"
        [ "$status" -eq 0 ]
        vm_mdev_exists "$U1"
        vm_mdev_exists "$U2"
        [ "$(vm_mdev_type "$U2")" = mtty-1 ]
        [ "$(vm_avail mtty-1)" -eq 22 ]
        run release g1
        [ "$status" -eq 0 ]
        vm_mdev_gone "$U1"
        vm_mdev_gone "$U2"
        [ "$(vm_avail mtty-1)" -eq 24 ]
}

@test "hooks: capacity comes from mtty's shared pool, and no capacity is one line naming the parent" {
        vm_config mtty-1
        take_ports 22        # 11 mtty-2 mdevs by hand: 2 ports left
        [ "$(vm_avail mtty-1)" -eq 2 ]
        xml g1 "$G1" "$U1:mtty-1"
        xml g2 "$G2" "$U2:mtty-1"
        xml g3 "$G3" "$U3:mtty-1"
        run prepare g1
        [ "$status" -eq 0 ]
        run prepare g2
        [ "$status" -eq 0 ]
        [ "$(vm_avail mtty-1)" -eq 0 ]
        run prepare g3
        echo "$output"
        [ "$status" -ne 0 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: g3: no capacity for mtty-1"*mtty* ]]
        vm_mdev_gone "$U3"
        # the hand-made mdevs are foreign: untouched
        [ "$(ls "$MTTY_TYPES/mtty-2/devices" | wc -l)" -eq 11 ]
}

@test "hooks: a prepare that waits for the lock reads the pool once it holds it: kernfs answers the file it opened before anew" {
        local lock=/run/mdev-hooks/lock pid="" i waiter holder
        vm_config mtty-1
        take_ports 24        # the pool full, by hand
        [ "$(vm_avail mtty-1)" -eq 0 ]
        xml g1 "$G1" "$U1:mtty-1"
        mkdir -p /run/mdev-hooks
        sh -c 'exec 9>> "$1"; flock 9; : > "$2"; while [ ! -e "$3" ]; do sleep 0.05; done' \
                sh "$lock" "$BATS_TEST_TMPDIR/held" "$BATS_TEST_TMPDIR/go" 3>&- &
        holder=$!
        for i in $(seq 200); do [ -e "$BATS_TEST_TMPDIR/held" ] && break; sleep 0.05; done
        prepare g1 2> "$BATS_TEST_TMPDIR/g1.err" 3>&- &
        waiter=$!
        # the hook holds mtty-1's available_instances open (alloc_preopen())
        # and waits in flock() for the lock
        for i in $(seq 200); do
                pid=$(pgrep -f -x "$HOOK g1 prepare begin -" | head -n 1)
                [ -n "$pid" ] && ls -l "/proc/$pid/fd" 2>/dev/null | grep -q '/mtty-1/available_instances$' &&
                        grep -qE "^[0-9]+: -> FLOCK .*:$(stat -c %i "$lock") " /proc/locks && break
                sleep 0.05
        done
        [ -n "$pid" ]
        # two ports freed while it waits
        echo 1 > /sys/bus/mdev/devices/7a7a0000-0000-4000-8000-000000000001/remove
        [ "$(vm_avail mtty-1)" -eq 2 ]
        touch "$BATS_TEST_TMPDIR/go"
        wait "$holder"
        local rc=0
        wait "$waiter" || rc=$?
        cat "$BATS_TEST_TMPDIR/g1.err"
        [ "$rc" -eq 0 ]
        [ ! -s "$BATS_TEST_TMPDIR/g1.err" ]
        [ "$(basename "$(readlink "/sys/bus/mdev/devices/$U1/mdev_type")")" = mtty-1 ]
}

@test "hooks: a guest whose second mdev does not fit leaves nothing behind (all or nothing)" {
        vm_config mtty-1
        take_ports 22
        xml g1 "$G1" "$U1:mtty-1" "$U2:mtty-1" "$U3:mtty-1"
        run prepare g1
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"no capacity for mtty-1"* ]]
        vm_mdev_gone "$U1"
        vm_mdev_gone "$U2"
        vm_mdev_gone "$U3"
        [ "$(vm_avail mtty-1)" -eq 2 ]
}

@test "hooks: a UUID held by another guest is refused, and the refused guest's release leaves it alone" {
        vm_config mtty-1
        xml g1 "$G1" "$U1:mtty-1"
        xml g2 "$G2" "$U1:mtty-1"
        run prepare g1
        [ "$status" -eq 0 ]
        run prepare g2
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == "mdev-hooks: g2: "*"g1"* ]]
        run release g2
        [ "$status" -eq 0 ]
        vm_mdev_exists "$U1"
        [ "$(vm_record_get "$U1" guest)" = g1 ]
        [ "$(vm_record_get "$U1" state)" = assigned ]
}

@test "hooks: an mdev that existed before is borrowed, and release does not remove it" {
        vm_config mtty-1
        echo "$U1" > "$MTTY_TYPES/mtty-1/create"
        xml g1 "$G1" "$U1:mtty-1"
        run prepare g1
        [ "$status" -eq 0 ]
        [ "$(vm_record_get "$U1" origin)" = borrowed ]
        run release g1
        [ "$status" -eq 0 ]
        vm_mdev_exists "$U1"
}

@test "hooks: with release = keep the kept mdevs stay free, and one is reclaimed when the shared pool is full" {
        vm_config mtty-1 release=keep
        take_ports 22
        xml g1 "$G1" "$U1:mtty-1" "$U2:mtty-1"
        xml g2 "$G2" "$U3:mtty-1"
        run prepare g1
        [ "$status" -eq 0 ]
        run release g1
        [ "$status" -eq 0 ]
        vm_mdev_exists "$U1"
        vm_mdev_exists "$U2"
        [ "$(vm_record_get "$U1" state)" = free ]
        [ "$(vm_record_get "$U2" state)" = free ]
        [ "$(vm_avail mtty-1)" -eq 0 ]
        run prepare g2
        echo "$output"
        [ "$status" -eq 0 ]
        vm_mdev_exists "$U3"
        [ "$(vm_record_get "$U3" guest)" = g2 ]
        # exactly one of the kept mdevs made room
        n=0
        vm_mdev_exists "$U1" && n=$((n + 1))
        vm_mdev_exists "$U2" && n=$((n + 1))
        [ "$n" -eq 1 ]
        [ "$(ls "$MTTY_TYPES/mtty-2/devices" | wc -l)" -eq 11 ]
}

@test "hooks: reconnect keeps the guest's claim" {
        vm_config mtty-1
        xml g1 "$G1" "$U1:mtty-1"
        run prepare g1
        [ "$status" -eq 0 ]
        run vm_hook g1 reconnect begin - < "$BATS_TEST_TMPDIR/g1.xml"
        [ "$status" -eq 0 ]
        vm_mdev_exists "$U1"
        [ "$(vm_record_get "$U1" guest)" = g1 ]
        [ "$(vm_record_get "$U1" state)" = assigned ]
}

@test "hooks: migrate on one host with the UUID free prints nothing and claims the mdev incoming" {
        vm_config mtty-1
        xml g1 "$G1" "$U4:mtty-1"
        run --separate-stderr vm_hook g1 migrate begin - < "$BATS_TEST_TMPDIR/g1.xml"
        echo "out: $output"; echo "err: $stderr"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        vm_mdev_exists "$U4"
        [ "$(vm_mdev_type "$U4")" = mtty-1 ]
        [ "$(vm_record_get "$U4" guest)" = g1 ]
        [ "$(vm_record_get "$U4" state)" = incoming ]
        # libvirt's prepare follows on the destination
        run prepare g1
        [ "$status" -eq 0 ]
        [ "$(vm_record_get "$U4" state)" = assigned ]
        run release g1
        vm_mdev_gone "$U4"
}

@test "hooks: migrate rewrites a UUID that another guest holds here to a new local mdev" {
        vm_config mtty-1
        xml g1 "$G1" "$U1:mtty-1"
        xml g2 "$G2" "$U1:mtty-1"
        run prepare g1
        [ "$status" -eq 0 ]
        run --separate-stderr vm_hook g2 migrate begin - < "$BATS_TEST_TMPDIR/g2.xml"
        echo "err: $stderr"
        [ "$status" -eq 0 ]
        new=$(printf '%s\n' "$output" | sed -n "s/.*<address uuid=['\"]\([0-9a-f-]*\)['\"].*/\1/p" | head -1)
        echo "new uuid: $new"
        [ -n "$new" ]
        [ "$new" != "$U1" ]
        vm_mdev_exists "$new"
        [ "$(vm_mdev_type "$new")" = mtty-1 ]
        [ "$(vm_record_get "$new" guest)" = g2 ]
        [ "$(vm_record_get "$U1" guest)" = g1 ]
}

@test "hooks: mdev-hooks list and types see the real mtty" {
        vm_config mtty-1
        xml g1 "$G1" "$U1:mtty-1"
        run prepare g1
        [ "$status" -eq 0 ]
        run mdev-hooks list --json
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(jq -r --arg u "$U1" '.mdevs[] | select(.uuid == $u) | "\(.parent) \(.type) \(.state) \(.guest)"' <<< "$output")" = "mtty mtty-1 assigned g1" ]
        run mdev-hooks types
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *mtty-1* ]]
        [[ "$output" == *mtty-2* ]]
        run mdev-hooks check-config
        echo "$output"
        [ "$status" -eq 0 ]
}
