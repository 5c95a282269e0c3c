#!/usr/bin/env bats
# NUMA-near placement (lib/place.c): a guest whose memory is pinned to a
# node (<numatune><memory nodeset=>) gets its vGPU on a GPU of that node
# when one there has room, of every kind, and another node's when none
# has; a guest without a wish is placed as it always was. On
# tests/sim/topologies/numa.conf: two GPUs of each kind, one per node.
# Tested against the simulator only.

load hook-helpers
load whole-helpers

MDEV=nvidia-35
NV=nvidia-1150
AMD=amd-mxgpu-2
XE=intel-xe-8192

setup() {
        sim_mount numa
        numa_conf
}

# numa_conf: every type of numa.conf on both of its GPUs.
numa_conf() {
        config_types "$MDEV" "0000:41:00.0, 0000:c1:00.0" "$NV" "0000:42:00.0, 0000:c2:00.0" \
                "$AMD" "0000:43:00.0, 0000:c3:00.0" "$XE" "0000:44:00.0, 0000:c4:00.0"
}

# node_of DEVICE: its numa_node as the simulated kernel shows it (a VF's is
# its PF's).
node_of() {
        cat "$SIM_SYS/bus/pci/devices/$1/numa_node"
}

# pin FILE NODE: the domain XML in FILE with its memory pinned to NODE, as
# virsh numatune --nodeset NODE --config writes it.
pin() {
        sed -i "s|^  <devices>|  <numatune>\n    <memory mode='strict' nodeset='$2'/>\n  </numatune>\n  <devices>|" "$1"
}

# restore_here: migrate_to_b's destination (B) is this host, its files in T.
restore_here() {
        # shellcheck disable=SC2034 # read by migrate_to_b
        B=$MDEV_HOOKS_ROOT
        T=$BATS_TEST_TMPDIR
}

uuid_n() {
        printf 'b1ae8bf6-38b0-4c81-9d44-%012d' "$1"
}

# mprepare NAME NODE|- UUID: prepare of a guest with one mdev of $MDEV,
# pinned to NODE (- : not pinned).
mprepare() {
        domxml "$1" "$3,type=$MDEV" > "$BATS_TEST_TMPDIR/$1.xml"
        [ "$2" = - ] || pin "$BATS_TEST_TMPDIR/$1.xml" "$2"
        hook "$1" prepare begin - < "$BATS_TEST_TMPDIR/$1.xml"
}

# the GPU of a kind's pair on node N (read from the host, not assumed)
gpu_on() {
        local n="$1" p
        shift
        for p in "$@"; do
                [ "$(node_of "$p")" != "$n" ] || { echo "$p"; return 0; }
        done
        return 1
}

@test "the simulated host has a GPU of each kind on node 0 and one on node 1" {
        for pair in "0000:41:00.0 0000:c1:00.0" "0000:42:00.0 0000:c2:00.0" "0000:43:00.0 0000:c3:00.0" \
                "0000:44:00.0 0000:c4:00.0"; do
                # shellcheck disable=SC2086
                gpu_on 0 $pair
                # shellcheck disable=SC2086
                gpu_on 1 $pair
        done
}

@test "prepare: a guest pinned to node 1 gets its mdev on node 1's GPU, an unpinned one where placement always put it" {
        run -0 mprepare g0 - "$U1"
        unpinned=$(mdev_parent "$U1")
        # the topology makes node 1's GPU the one placement would not choose
        [ "$(node_of "$unpinned")" = 0 ]
        run -0 mprepare g1 1 "$U2"
        [ "$(node_of "$(mdev_parent "$U2")")" = 1 ]
        # the unpinned guest's choice is the one a host without NUMA gives
        run -0 release g0
        run -0 release g1
        sim_umount
        grep -v '^numa ' "$MH_SOURCE_DIR/tests/sim/topologies/numa.conf" > "$BATS_TEST_TMPDIR/flat.conf"
        sim_mount "$BATS_TEST_TMPDIR/flat.conf"
        numa_conf
        [ "$(node_of 0000:c1:00.0)" = -1 ]
        run -0 mprepare g0 - "$U1"
        [ "$(mdev_parent "$U1")" = "$unpinned" ]
}

@test "prepare: an unpinned guest reads no numa_node; a pinned one reads its candidates'" {
        sim_counters_reset
        run -0 mprepare g0 - "$U1"
        [ -z "$(sim_counters | awk '/numa_node/ && ($1 > 0 || $2 > 0)')" ]
        run -0 mprepare g1 1 "$U2"
        [ -n "$(sim_counters | awk '/numa_node/ && ($1 > 0 || $2 > 0)')" ]
}

@test "prepare: a guest pinned to node 1 gets an mdev on node 0 when node 1's GPU is full" {
        local near far room n
        near=$(gpu_on 1 0000:41:00.0 0000:c1:00.0)
        far=$(gpu_on 0 0000:41:00.0 0000:c1:00.0)
        room=$(sim_available "$near" "$MDEV")
        [ "$room" -gt 0 ]
        # (not $i: bats' run uses it)
        for ((n = 1; n <= room; n++)); do
                run -0 mprepare "g$n" 1 "$(uuid_n "$n")"
                [ "$(mdev_parent "$(uuid_n "$n")")" = "$near" ]
        done
        [ "$(sim_available "$near" "$MDEV")" = 0 ]
        run -0 mprepare late 1 "$(uuid_n 99)"
        [ "$(mdev_parent "$(uuid_n 99)")" = "$far" ]
}

@test "restore: a pinned guest's mdev is made on node 1's GPU" {
        domxml g1 "$U1,type=$MDEV" > "$BATS_TEST_TMPDIR/g1.xml"
        pin "$BATS_TEST_TMPDIR/g1.xml" 1
        restore_here
        migrate_to_b g1 restore
        [ "$status" -eq 0 ]
        [ "$(node_of "$(mdev_parent "$U1")")" = 1 ]
}

@test "pick --numa-node 1 gives a VF on node 1's GPU, of every kind; without it the VF placement gives on node 0" {
        local t v
        for t in "$NV" "$AMD" "$XE"; do
                v=$("$MH_CLI" pick "$t")
                [ "$(node_of "$v")" = 0 ] || { echo "$t: unpinned pick $v"; return 1; }
                v=$("$MH_CLI" pick "$t" --numa-node 1)
                [ "$(node_of "$v")" = 1 ] || { echo "$t: pick --numa-node 1 gave $v"; return 1; }
                v=$("$MH_CLI" pick "$t" --numa-node 0)
                [ "$(node_of "$v")" = 0 ] || { echo "$t: pick --numa-node 0 gave $v"; return 1; }
        done
}

# take_node1 TYPE: guests take the VFs pick --numa-node 1 gives until it
# gives one on another node; prints that one. Fails when none was on node 1.
take_node1() {
        local t="$1" v n
        for ((n = 1; n <= 16; n++)); do
                v=$("$MH_CLI" pick "$t" --numa-node 1) || return 1
                if [ "$(node_of "$v")" != 1 ]; then
                        [ "$n" -gt 1 ] && echo "$v"
                        return
                fi
                if [ "$t" = "$NV" ]; then
                        vprepare "g$t$n" "pci=$v,type=$t" >&2 || return 1
                else
                        aprepare "g$t$n" "pci=$v,type=$t" >&2 || return 1
                fi
        done
        return 1
}

@test "pick --numa-node 1 falls back to a VF on node 0 once node 1's are taken, of every kind" {
        local t v
        for t in "$NV" "$AMD" "$XE"; do
                v=$(take_node1 "$t")
                [ -n "$v" ] && [ "$(node_of "$v")" = 0 ] || { echo "$t: after node 1 was full: '$v'"; return 1; }
        done
}

@test "restore: a pinned guest's NVIDIA VF moves to node 1's GPU; an unpinned one keeps its address" {
        local v0
        v0=$("$MH_CLI" pick "$NV")
        [ "$(node_of "$v0")" = 0 ]
        restore_here
        vxml g0 "pci=$v0,type=$NV" > "$T/g0.xml"
        migrate_to_b g0 restore
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        run -0 hook g0 release end - < "$T/g0.xml"
        vxml g1 "pci=$v0,type=$NV" > "$T/g1.xml"
        pin "$T/g1.xml" 1
        migrate_to_b g1 restore
        [ "$status" -eq 0 ]
        v=$(sed -nE 's/.*<mh:vgpu pci="([^"]+)".*/\1/p' "$T/g1.b.xml")
        [ "$(node_of "$v")" = 1 ]
        [ "$(record_get "$v" guest)" = g1 ]
}

@test "restore: a pinned guest's Intel VF moves to node 1's GPU" {
        local v0
        xe_vfio_pci_installed
        v0=$("$MH_CLI" pick "$XE")
        [ "$(node_of "$v0")" = 0 ]
        restore_here
        axml g1 "pci=$v0,type=$XE" > "$T/g1.xml"
        pin "$T/g1.xml" 1
        migrate_to_b g1 restore
        [ "$status" -eq 0 ]
        v=$(sed -nE 's/.*<mh:vgpu pci="([^"]+)".*/\1/p' "$T/g1.b.xml")
        [ "$(node_of "$v")" = 1 ]
        [ "$(record_get "$v" guest)" = g1 ]
}

# second_vf PF: its second VF (not the one placement gives first).
second_vf() {
        basename "$(readlink "$SIM_SYS/bus/pci/devices/$1/virtfn1")"
}

@test "migrate: a pinned guest's NVIDIA VF and mdev go to node 1's GPUs on the destination" {
        local v0 v
        restore_here
        A=$MDEV_HOOKS_ROOT
        B="$BATS_TEST_TMPDIR/b"
        v0=$("$MH_CLI" pick "$NV")
        [ "$(node_of "$v0")" = 0 ]
        vxml g1 "pci=$v0,type=$NV" "$U1,type=$MDEV" > "$T/g1.xml"
        pin "$T/g1.xml" 1
        run -0 hook g1 prepare begin - < "$T/g1.xml"
        sim_mount numa "$B"
        numa_conf
        migrate_to_b g1
        [ "$status" -eq 0 ] || { echo "$output"; return 1; }
        v=$(sed -nE 's/.*<mh:vgpu pci="([^"]+)".*/\1/p' "$T/g1.b.xml")
        [ "$(node_of "$v")" = 1 ]
        [ "$(record_get "$v" state)" = incoming ]
        [ "$(node_of "$(mdev_parent "$U1")")" = 1 ]
        sim_use "$A"
        # the source keeps its own: on node 0, as the guest was given it
        [ "$(record_get "$v0" guest)" = g1 ]
}

@test "restore: a pinned guest keeps its NVIDIA or Intel VF's address when node 1 has no free VF" {
        local t pf0 v
        xe_vfio_pci_installed
        restore_here
        for t in "$NV" "$XE"; do
                [ -n "$(take_node1 "$t")" ]
                if [ "$t" = "$NV" ]; then
                        pf0=$(gpu_on 0 0000:42:00.0 0000:c2:00.0)
                        v=$(second_vf "$pf0")
                        vxml "r$t" "pci=$v,type=$t" > "$T/r$t.xml"
                else
                        pf0=$(gpu_on 0 0000:44:00.0 0000:c4:00.0)
                        v=$(second_vf "$pf0")
                        axml "r$t" "pci=$v,type=$t" > "$T/r$t.xml"
                fi
                [ "$v" != "$("$MH_CLI" pick "$t" --numa-node 1)" ]
                pin "$T/r$t.xml" 1
                migrate_to_b "r$t" restore
                # shellcheck disable=SC2154 # stderr: set by run --separate-stderr
                [ "$status" -eq 0 ] || { echo "$t: $stderr"; return 1; }
                [ -z "$output" ] || { echo "$t: rewritten: $output"; return 1; }
                [ "$(record_get "$v" guest)" = "r$t" ]
        done
}

@test "the simulated VFs are on their GPU's node again after a reboot and sriov_numvfs" {
        local pf vf
        sim_reboot
        for pf in 0000:c2:00.0 0000:c4:00.0; do
                [ ! -e "$SIM_SYS/bus/pci/devices/$pf/virtfn0" ]
                echo 2 > "$SIM_SYS/bus/pci/devices/$pf/sriov_numvfs"
                vf=$(basename "$(readlink "$SIM_SYS/bus/pci/devices/$pf/virtfn0")")
                [ "$(node_of "$vf")" = "$(node_of "$pf")" ]
                [ "$(node_of "$pf")" = 1 ]
        done
        [ "$(node_of "$("$MH_CLI" pick "$NV" --numa-node 1)")" = 1 ]
}

@test "pick refuses a --numa-node that is no node, in one line" {
        for n in 64 -1 x ""; do
                run "$MH_CLI" pick "$NV" --numa-node "$n"
                [ "$status" -eq 2 ]
                [ "${#lines[@]}" -eq 1 ]
                [[ "$output" == *"--numa-node '$n' is not a NUMA node"* ]]
        done
}
