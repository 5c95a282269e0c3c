#!/usr/bin/env bats
# `mdev-hooks placement sync` against a real OpenStack Placement API (Debian's
# placement-api, SQLite, noauth2, on loopback; tests/placement/placement-server
# starts it once for this file and stops it at the end). The hosts are the
# sysfs simulator's topologies; the guests are started and stopped by the real
# hook. Every test uses host names of its own, since they share one Placement.

load hook-helpers

PLACEMENT_SERVER="$MH_SOURCE_DIR/tests/placement/placement-server"

setup_file() {
        local rc=0
        export PL_DIR="$BATS_FILE_TMPDIR/placement"
        PL_URL=$("$PLACEMENT_SERVER" start "$PL_DIR") || rc=$?
        if [ "$rc" -eq 77 ]; then
                export PL_SKIP="Placement API not available (placement-api not installable here)"
        elif [ "$rc" -ne 0 ]; then
                return "$rc"
        fi
        export PL_URL
}

teardown_file() {
        "$PLACEMENT_SERVER" stop "$PL_DIR"
}

setup() {
        [ -z "${PL_SKIP:-}" ] || skip "$PL_SKIP"
}

# pl_get PATH: Placement's answer to GET PATH (JSON), as an admin.
pl_get() {
        curl -sf -H 'X-Auth-Token: admin' -H 'OpenStack-API-Version: placement 1.38' "$PL_URL$1"
}

# pl_writes: how many requests other than GET Placement has logged so far.
pl_writes() {
        grep -cE '"(PUT|POST|DELETE|PATCH) /' "$PL_DIR/log" || true
}

# sync HOST [ARGS...]: the sync of the current root as HOST.
sync() {
        local host="$1"
        shift
        "$MH_CLI" placement sync --url "$PL_URL" --token admin --host "$host" "$@"
}

# tree HOST: "name total class traits" per provider of HOST's tree, sorted.
tree() {
        local root
        root=$(pl_get "/resource_providers?name=$1" | jq -r '.resource_providers[0].uuid')
        [ "$root" != null ] || return 1
        pl_get "/resource_providers?in_tree=$root" | jq -r '.resource_providers[] | .uuid + " " + .name' |
                while read -r uuid name; do
                        printf '%s %s %s\n' "$name" \
                                "$(pl_get "/resource_providers/$uuid/inventories" | jq -r '[.inventories | to_entries[] | "\(.key)=\(.value.total)"] | join(",") | if . == "" then "-" else . end')" \
                                "$(pl_get "/resource_providers/$uuid/traits" | jq -r '.traits | sort | join(",") | if . == "" then "-" else . end')"
                done | sort
}

# candidates RC TRAIT: the names of the providers that allocation candidates
# for one unit of RC with TRAIT name, sorted.
candidates() {
        local ids
        ids=$(pl_get "/allocation_candidates?resources=$1:1&required=$2" |
                jq -r '.allocation_requests[].allocations | keys[]' | sort -u)
        for id in $ids; do
                pl_get "/resource_providers/$id" | jq -r .name
        done | sort
}

@test "placement sync of nvidia-timesliced makes the root, one provider per parent, inventories and traits" {
        sim_mount nvidia-timesliced
        config_timesliced
        run -0 sync ts1
        [[ "${lines[-1]}" == "ts1: 5 providers, 0 guests with allocations: synced ("* ]]
        run -0 tree ts1
        [ "$output" = "ts1 - -
ts1_pci_0000_84_00_0 VGPU=16 CUSTOM_MDEV_NVIDIA_35
ts1_pci_0000_85_00_0 VGPU=16 CUSTOM_MDEV_NVIDIA_35
ts1_pci_0000_86_00_0 CUSTOM_NVIDIA_36=16 CUSTOM_MDEV_NVIDIA_36
ts1_pci_0000_87_00_0 CUSTOM_NVIDIA_36=16 CUSTOM_MDEV_NVIDIA_36" ]
        # nested under the root, with the UUIDs mdev-hooks derives from the names
        root=$(pl_get "/resource_providers?name=ts1" | jq -r '.resource_providers[0].uuid')
        [ "$(pl_get "/resource_providers?name=ts1_pci_0000_84_00_0" | jq -r '.resource_providers[0].parent_provider_uuid')" = "$root" ]
        run -0 sync ts1 --json
        [ "$(jq -r .root_provider <<<"$output")" = "$root" ]
}

@test "placement sync: allocation candidates for a trait name exactly the parents of that type" {
        sim_mount nvidia-timesliced
        config_timesliced
        run -0 sync cand1
        run -0 candidates VGPU CUSTOM_MDEV_NVIDIA_35
        [[ "$output" == *"cand1_pci_0000_84_00_0"* ]]
        [[ "$output" == *"cand1_pci_0000_85_00_0"* ]]
        [[ "$output" != *"cand1_pci_0000_86_00_0"* ]]
        run -0 candidates CUSTOM_NVIDIA_36 CUSTOM_MDEV_NVIDIA_36
        [[ "$output" == *"cand1_pci_0000_86_00_0"* ]]
        [[ "$output" == *"cand1_pci_0000_87_00_0"* ]]
        [[ "$output" != *"cand1_pci_0000_84_00_0"* ]]
        # no VGPU candidate carries the other type's trait
        run -0 candidates VGPU CUSTOM_MDEV_NVIDIA_36
        [[ "$output" != *cand1_* ]]
}

@test "placement sync of nvidia-sriov makes one provider of one vGPU per VF" {
        sim_mount nvidia-sriov
        config_write <<'EOF'
[devices]
enabled_mdev_types = nvidia-471
EOF
        run -0 sync sriov1
        run -0 tree sriov1
        [ "${#lines[@]}" -eq 33 ]
        [ "$(grep -c ' VGPU=1 CUSTOM_MDEV_NVIDIA_471$' <<<"$output")" -eq 32 ]
        [[ "$output" == *"sriov1_pci_0000_3b_00_4 VGPU=1 CUSTOM_MDEV_NVIDIA_471"* ]]
        run -0 candidates VGPU CUSTOM_MDEV_NVIDIA_471
        [ "$(grep -c '^sriov1_pci_' <<<"$output")" -eq 32 ]
}

@test "placement sync of large makes 256 providers; a second sync sends one GET and no write" {
        sim_mount large
        config_write <<'EOF'
[devices]
enabled_mdev_types = nvidia-101
EOF
        run -0 sync big1 --json
        [ "$(jq -r .providers <<<"$output")" -eq 257 ]
        [ "$(pl_get "/resource_providers?in_tree=$(jq -r .root_provider <<<"$output")" | jq '.resource_providers | length')" -eq 257 ]
        [ "$(pl_get "/resource_providers?name=big1_pci_0000_80_01_0" | jq -r '.resource_providers[0].uuid' | xargs -I{} curl -sf -H 'X-Auth-Token: admin' "$PL_URL/resource_providers/{}/inventories" | jq .inventories.VGPU.total)" -eq 8 ]
        before=$(pl_writes)
        run -0 sync big1 --json
        [ "$(jq -r .requests.writes <<<"$output")" -eq 0 ]
        [ "$(jq -r .requests.total <<<"$output")" -eq 1 ]
        [ "$(jq '.changes | length' <<<"$output")" -eq 0 ]
        [ "$(pl_writes)" -eq "$before" ]
}

@test "placement sync: a second run with nothing changed sends no write, even without its cache" {
        sim_mount nvidia-timesliced
        config_timesliced
        run -0 sync idem1
        before=$(pl_writes)
        run -0 sync idem1
        [[ "$output" == "idem1: 5 providers, 0 guests with allocations: up to date (1 requests, 0 writes)" ]]
        rm -r "$MDEV_HOOKS_ROOT/run/mdev-hooks/placement"
        run -0 sync idem1 --json
        [ "$(jq -r .requests.writes <<<"$output")" -eq 0 ]
        [ "$(jq -r .requests.total <<<"$output")" -eq 16 ]   # the tree, then 3 reads for each of 5 providers
        [ "$(pl_writes)" -eq "$before" ]
}

@test "placement sync: after a prepare and a release, a sync moves the guest's usage" {
        sim_mount nvidia-timesliced
        config_timesliced
        U1=6b0c1c4e-6e4b-4b53-9d7a-0d0c3b1e2a01
        run -0 sync mv1
        run -0 prepare web1 "$U1,type=nvidia-35"
        guest=$(grep -o '<uuid>[^<]*' "$BATS_TEST_TMPDIR/web1.xml" | cut -c7-)
        parent=$(mdev_parent "$U1")
        node="mv1_pci_$(tr ':.' '__' <<<"$parent")"
        run -0 sync mv1
        [[ "${lines[-1]}" == "mv1: 5 providers, 1 guests with allocations: synced ("* ]]
        rp=$(pl_get "/resource_providers?name=$node" | jq -r '.resource_providers[0].uuid')
        [ "$(pl_get "/allocations/$guest" | jq -c ".allocations[\"$rp\"].resources")" = '{"VGPU":1}' ]
        [ "$(pl_get "/allocations/$guest" | jq -r .consumer_type)" = INSTANCE ]
        [ "$(pl_get "/resource_providers/$rp/usages" | jq .usages.VGPU)" -eq 1 ]
        # nothing changed since: no write
        run -0 sync mv1 --json
        [ "$(jq -r .requests.writes <<<"$output")" -eq 0 ]

        run -0 release web1
        run -0 sync mv1
        [ "$(pl_get "/allocations/$guest" | jq '.allocations | length')" -eq 0 ]
        [ "$(pl_get "/resource_providers/$rp/usages" | jq .usages.VGPU)" -eq 0 ]
}

# nvmodes_conf: nvidia-modes' GPUs, 0000:41:00.0 mixed-size under a 4Q and an
# 8Q type (one class, VGPU), 0000:c1:00.0 MIG under a 1-slice 24 GiB and
# 8 GiB type (two 1-slice instances), with the simulator's stand-in tools.
nvmodes_conf() {
        config_write <<CONF
[devices]
enabled_mdev_types = nvidia-1201, nvidia-1202, nvidia-1301, nvidia-1302
[mdev_nvidia-1201]
device_addresses = 0000:41:00.0
[mdev_nvidia-1202]
device_addresses = 0000:41:00.0
[mdev_nvidia-1301]
device_addresses = 0000:c1:00.0
[mdev_nvidia-1302]
device_addresses = 0000:c1:00.0
[gpu]
sriov_manage = $MH_SOURCE_DIR/tests/nvidia-tools/sriov-manage
nvidia_smi = $MH_SOURCE_DIR/tests/nvidia-tools/nvidia-smi
unbind_retry_ms = 0
[gpu_0000:41:00.0]
mode = mixed
[gpu_0000:c1:00.0]
mode = mig
mig_instances = 1g.24gb, 1g.24gb
CONF
}

@test "placement sync: a mixed-size and a MIG GPU get a provider per type, and a guest's vGPU is on its type's" {
        sim_mount nvidia-modes
        nvmodes_conf
        "$MH_CLI" gpu plan > /dev/null
        run -0 vprepare big "pci=0000:41:00.4,type=nvidia-1202"
        guest=$(grep -o '<uuid>[^<]*' "$BATS_TEST_TMPDIR/big.xml" | cut -c7-)
        run -0 sync mx1
        # 88 GiB left: 15 VFs take 15 4Q, 11 8Q more; two empty 1-slice
        # instances: 2 of 24 GiB or 6 of 8 GiB
        run -0 tree mx1
        [ "$output" = "mx1 - -
mx1_pci_0000_41_00_0_nvidia-1201 VGPU=15 CUSTOM_MDEV_NVIDIA_1201
mx1_pci_0000_41_00_0_nvidia-1202 VGPU=12 CUSTOM_MDEV_NVIDIA_1202
mx1_pci_0000_c1_00_0_nvidia-1301 VGPU=2 CUSTOM_MDEV_NVIDIA_1301
mx1_pci_0000_c1_00_0_nvidia-1302 VGPU=6 CUSTOM_MDEV_NVIDIA_1302" ]
        # the totals are inventory's
        for t in 1201 1202 1301 1302; do
                inv=$("$MH_CLI" inventory --json | jq -r --arg t "nvidia-$t" '.parents[] | select(.type == $t) | .total')
                [ "$(tree mx1 | awk -v t="nvidia-$t" '$1 ~ "_" t "$" { sub("VGPU=", "", $2); print $2 }')" = "$inv" ]
        done
        rp=$(pl_get "/resource_providers?name=mx1_pci_0000_41_00_0_nvidia-1202" | jq -r '.resource_providers[0].uuid')
        [ "$(pl_get "/allocations/$guest" | jq -c ".allocations[\"$rp\"].resources")" = '{"VGPU":1}' ]
        [ "$(pl_get "/allocations/$guest" | jq '.allocations | length')" -eq 1 ]
        # a scheduler asking for the 8Q type's trait gets that provider only
        run -0 candidates VGPU CUSTOM_MDEV_NVIDIA_1202
        [ "$(grep -c '^mx1_' <<<"$output")" -eq 1 ]
        [[ "$output" == *"mx1_pci_0000_41_00_0_nvidia-1202"* ]]
        # nothing changed: no write
        run -0 sync mx1 --json
        [ "$(jq -r .requests.writes <<<"$output")" -eq 0 ]
}

# pl_send METHOD PATH BODY: a write as an admin; fails on an HTTP error.
pl_send() {
        curl -sf -X "$1" -H 'X-Auth-Token: admin' -H 'OpenStack-API-Version: placement 1.38' \
                -H 'Content-Type: application/json' ${3:+-d "$3"} "$PL_URL$2"
}

@test "placement sync on a host that Nova reports too leaves Nova's root, children and instances alone" {
        R=3f1e0c2a-5b6d-4e7f-8a9b-0c1d2e3f4a5b
        C=3f1e0c2a-5b6d-4e7f-8a9b-0c1d2e3f4a5c
        I=3f1e0c2a-5b6d-4e7f-8a9b-0c1d2e3f4a5d
        pl_send POST /resource_providers "{\"name\": \"nova1\", \"uuid\": \"$R\"}" >/dev/null
        pl_send PUT "/resource_providers/$R/inventories" '{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}}' >/dev/null
        pl_send PUT /resource_classes/CUSTOM_PCI_10DE_1EB8 >/dev/null
        pl_send POST /resource_providers "{\"name\": \"nova1_0000:81:00.0\", \"uuid\": \"$C\", \"parent_provider_uuid\": \"$R\"}" >/dev/null
        pl_send PUT "/resource_providers/$C/inventories" '{"resource_provider_generation": 0, "inventories": {"CUSTOM_PCI_10DE_1EB8": {"total": 1}}}' >/dev/null
        pl_send PUT "/allocations/$I" "{\"allocations\": {\"$R\": {\"resources\": {\"VCPU\": 2}}, \"$C\": {\"resources\": {\"CUSTOM_PCI_10DE_1EB8\": 1}}}, \"consumer_generation\": null, \"project_id\": \"p\", \"user_id\": \"u\", \"consumer_type\": \"INSTANCE\"}"
        nova_alloc=$(pl_get "/allocations/$I" | jq -cS .allocations)

        sim_mount nvidia-timesliced
        config_timesliced
        U1=3f1e0c2a-5b6d-4e7f-8a9b-0c1d2e3f4a01
        run -0 prepare web1 "$U1,type=nvidia-35"
        guest=$(grep -o '<uuid>[^<]*' "$BATS_TEST_TMPDIR/web1.xml" | cut -c7-)
        run -0 sync nova1 --json
        [ "$(jq -r .root_provider <<<"$output")" = "$R" ]
        # Nova's: the root's inventory, its child, its instance's allocations
        [ "$(pl_get "/resource_providers/$R/inventories" | jq .inventories.VCPU.total)" -eq 8 ]
        [ "$(pl_get "/resource_providers/$C" | jq -r .name)" = "nova1_0000:81:00.0" ]
        [ "$(pl_get "/allocations/$I" | jq -cS .allocations)" = "$nova_alloc" ]
        # ours, nested under Nova's compute node
        [ "$(pl_get "/resource_providers?name=nova1_pci_0000_84_00_0" | jq -r '.resource_providers[0].parent_provider_uuid')" = "$R" ]
        [ "$(pl_get "/allocations/$guest" | jq '[.allocations[].resources.VGPU] | add')" -eq 1 ]
        run -0 release web1
        run -0 sync nova1
        [ "$(pl_get "/allocations/$I" | jq -cS .allocations)" = "$nova_alloc" ]
        [ "$(pl_get "/allocations/$guest" | jq '.allocations | length')" -eq 0 ]
        run -0 sync nova1 --json
        run -0 sync nova1 --json
        [ "$(jq -r .requests.writes <<<"$output")" -eq 0 ]
}

@test "placement sync removes the provider of a parent that is gone" {
        sim_mount nvidia-timesliced
        config_timesliced
        run -0 sync gone1
        sim_unregister 0000:87:00.0
        run -0 sync gone1
        [[ "$output" == *"DELETE /resource_providers/"* ]]
        run -0 tree gone1
        [ "${#lines[@]}" -eq 4 ]
        [[ "$output" != *gone1_pci_0000_87_00_0* ]]
}

@test "placement sync: two hosts share one Placement and the candidates span both" {
        sim_mount nvidia-timesliced "$BATS_TEST_TMPDIR/a"
        config_timesliced
        run -0 sync fleet-a
        sim_mount nvidia-timesliced "$BATS_TEST_TMPDIR/b"
        config_timesliced
        run -0 sync fleet-b
        run -0 candidates VGPU CUSTOM_MDEV_NVIDIA_35
        [[ "$output" == *"fleet-a_pci_0000_84_00_0"* ]]
        [[ "$output" == *"fleet-a_pci_0000_85_00_0"* ]]
        [[ "$output" == *"fleet-b_pci_0000_84_00_0"* ]]
        [[ "$output" == *"fleet-b_pci_0000_85_00_0"* ]]
        # each host's providers under its own root
        run -0 tree fleet-a
        [ "${#lines[@]}" -eq 5 ]
        run -0 tree fleet-b
        [ "${#lines[@]}" -eq 5 ]
}

@test "placement sync: concurrent syncs of two hosts holding one guest converge after a generation conflict" {
        needs_crashpoints # MDEV_HOOKS_PAUSE_AT
        U1=7c1d2e3f-1a2b-4c3d-8e4f-5a6b7c8d9e01
        U2=7c1d2e3f-1a2b-4c3d-8e4f-5a6b7c8d9e02
        # one guest (a migration half done) with an mdev on each host
        sim_mount nvidia-timesliced "$BATS_TEST_TMPDIR/a"
        config_timesliced
        run -0 prepare mig1 "$U1,type=nvidia-35"
        sim_mount nvidia-timesliced "$BATS_TEST_TMPDIR/b"
        config_timesliced
        run -0 prepare mig1 "$U2,type=nvidia-35"
        guest=$(grep -o '<uuid>[^<]*' "$BATS_TEST_TMPDIR/mig1.xml" | cut -c7-)

        # host a reads the guest's allocations, then waits; host b writes them
        sim_use "$BATS_TEST_TMPDIR/a"
        export MDEV_HOOKS_PAUSE_FILE="$BATS_TEST_TMPDIR/pause"
        MDEV_HOOKS_PAUSE_AT=placement-allocations-read sync conc-a --json > "$BATS_TEST_TMPDIR/a.out" 2>&1 &
        pid=$!
        for i in $(seq 600); do [ -e "$MDEV_HOOKS_PAUSE_FILE" ] && break; sleep 0.1; done
        [ -e "$MDEV_HOOKS_PAUSE_FILE" ]
        sim_use "$BATS_TEST_TMPDIR/b"
        run -0 sync conc-b
        rm "$MDEV_HOOKS_PAUSE_FILE"
        wait "$pid"
        [ "$(jq -r .conflicts "$BATS_TEST_TMPDIR/a.out")" -ge 1 ]
        grep -q '409' "$PL_DIR/log"

        # the guest holds one vGPU on each host, and both syncs are at rest
        [ "$(pl_get "/allocations/$guest" | jq '[.allocations[].resources.VGPU] | add')" -eq 2 ]
        run -0 sync conc-b --json
        [ "$(jq -r .requests.writes <<<"$output")" -eq 0 ]
        sim_use "$BATS_TEST_TMPDIR/a"
        run -0 sync conc-a --json
        [ "$(jq -r .requests.writes <<<"$output")" -eq 0 ]
}

@test "placement sync retries when another writer moves a provider's generation" {
        needs_crashpoints # MDEV_HOOKS_PAUSE_AT
        sim_mount nvidia-timesliced
        config_timesliced
        run -0 sync gen1
        # 0000:86:00.0 and 0000:87:00.0 change type: their inventories and traits are rewritten
        printf '[devices]\nenabled_mdev_types = nvidia-35\n' | config_write
        export MDEV_HOOKS_PAUSE_FILE="$BATS_TEST_TMPDIR/pause"
        MDEV_HOOKS_PAUSE_AT=placement-after-fetch sync gen1 --json > "$BATS_TEST_TMPDIR/out" 2>&1 &
        pid=$!
        for i in $(seq 600); do [ -e "$MDEV_HOOKS_PAUSE_FILE" ] && break; sleep 0.1; done
        [ -e "$MDEV_HOOKS_PAUSE_FILE" ]
        # another writer: a trait of its own on one provider
        rp=$(pl_get "/resource_providers?name=gen1_pci_0000_86_00_0" | jq -r '.resource_providers[0].uuid')
        gen=$(pl_get "/resource_providers/$rp" | jq .generation)
        curl -sf -X PUT -H 'X-Auth-Token: admin' -H 'OpenStack-API-Version: placement 1.38' -H 'Content-Type: application/json' \
                -d "{\"traits\": [\"HW_GPU_API_VULKAN\"], \"resource_provider_generation\": $gen}" "$PL_URL/resource_providers/$rp/traits" >/dev/null
        rm "$MDEV_HOOKS_PAUSE_FILE"
        wait "$pid"
        [ "$(jq -r .conflicts "$BATS_TEST_TMPDIR/out")" -ge 1 ]
        run -0 tree gen1
        [[ "$output" == *"gen1_pci_0000_86_00_0 VGPU=16 CUSTOM_MDEV_NVIDIA_35"* ]]
}

@test "placement sync gives up after 5 rounds of conflicts, in one line, exit 1" {
        needs_crashpoints # MDEV_HOOKS_PAUSE_AT
        sim_mount nvidia-timesliced
        config_timesliced
        run -0 sync busy1
        printf '[devices]\nenabled_mdev_types = nvidia-35\n' | config_write
        rp=$(pl_get "/resource_providers?name=busy1_pci_0000_86_00_0" | jq -r '.resource_providers[0].uuid')
        export MDEV_HOOKS_PAUSE_FILE="$BATS_TEST_TMPDIR/pause"
        MDEV_HOOKS_PAUSE_AT=placement-after-fetch:every sync busy1 > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" &
        pid=$!
        # another writer moves the provider's generation in every round
        for round in 1 2 3 4 5; do
                for i in $(seq 600); do [ -e "$MDEV_HOOKS_PAUSE_FILE" ] && break; sleep 0.1; done
                [ -e "$MDEV_HOOKS_PAUSE_FILE" ]
                # a trait of its own each time (writing the same traits again moves nothing)
                pl_send PUT "/traits/CUSTOM_BUSY_$round" >/dev/null
                gen=$(pl_get "/resource_providers/$rp" | jq .generation)
                pl_send PUT "/resource_providers/$rp/traits" "{\"traits\": [\"CUSTOM_BUSY_$round\"], \"resource_provider_generation\": $gen}" >/dev/null
                [ "$(pl_get "/resource_providers/$rp" | jq .generation)" -gt "$gen" ]
                rm "$MDEV_HOOKS_PAUSE_FILE"
        done
        rc=0
        wait "$pid" || rc=$?
        [ "$rc" -eq 1 ]
        [ "$(wc -l < "$BATS_TEST_TMPDIR/err")" -eq 1 ]
        grep -q "^mdev-hooks: placement sync: Placement at $PL_URL: still conflicting after 5 rounds" "$BATS_TEST_TMPDIR/err"
        # left alone, the next sync completes
        unset MDEV_HOOKS_PAUSE_FILE
        run -0 sync busy1
        run -0 tree busy1
        [[ "$output" == *"busy1_pci_0000_86_00_0 VGPU=16 CUSTOM_MDEV_NVIDIA_35"* ]]
}

@test "placement sync: Placement stopped mid-sync fails in one line and the next sync completes" {
        needs_crashpoints # MDEV_HOOKS_PAUSE_AT
        sim_mount nvidia-timesliced
        config_timesliced
        export MDEV_HOOKS_PAUSE_FILE="$BATS_TEST_TMPDIR/pause"
        MDEV_HOOKS_PAUSE_AT=placement-write:6 sync half1 > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" &
        pid=$!
        for i in $(seq 600); do [ -e "$MDEV_HOOKS_PAUSE_FILE" ] && break; sleep 0.1; done
        [ -e "$MDEV_HOOKS_PAUSE_FILE" ]
        "$PLACEMENT_SERVER" stop "$PL_DIR"
        rm "$MDEV_HOOKS_PAUSE_FILE"
        rc=0
        wait "$pid" || rc=$?
        [ "$rc" -eq 1 ]
        [ "$(wc -l < "$BATS_TEST_TMPDIR/err")" -eq 1 ]
        grep -q "^mdev-hooks: placement sync: cannot reach Placement at $PL_URL" "$BATS_TEST_TMPDIR/err"
        # nothing on the host changed: no cache written
        [ ! -e "$MDEV_HOOKS_ROOT/run/mdev-hooks/placement/half1.json" ]

        "$PLACEMENT_SERVER" start "$PL_DIR" "${PL_URL##*:}"
        run -0 tree half1
        [ "${#lines[@]}" -lt 5 ] || [[ "$output" == *" - -"* ]]   # partial
        run -0 sync half1
        run -0 tree half1
        [ "${#lines[@]}" -eq 5 ]
        [[ "$output" == *"half1_pci_0000_87_00_0 CUSTOM_NVIDIA_36=16 CUSTOM_MDEV_NVIDIA_36"* ]]
}

@test "placement sync: Placement down, a bad token: one line, exit 1, nothing written on the host" {
        sim_mount nvidia-timesliced
        config_timesliced
        before=$(find "$MDEV_HOOKS_ROOT/run" "$MDEV_HOOKS_ROOT/var" -newer "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf" | wc -l)
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        run -1 "$MH_CLI" placement sync --url "http://127.0.0.1:$port" --token admin --host down1
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: placement sync: cannot reach Placement at http://127.0.0.1:$port (GET /resource_providers?in_tree="*"): "* ]]
        run -1 "$MH_CLI" placement sync --url "$PL_URL" --token not-admin --host down1
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"refused the request"*"HTTP 403"*"check --token or [placement] token_file" ]]
        run -1 "$MH_CLI" placement sync --url "$PL_URL" --host down1
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"HTTP 401"* ]]
        [ "$(find "$MDEV_HOOKS_ROOT/run" "$MDEV_HOOKS_ROOT/var" -newer "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf" | wc -l)" -eq "$before" ]
        run -0 pl_get "/resource_providers?name=down1"
        [ "$(jq '.resource_providers | length' <<<"$output")" -eq 0 ]
}

@test "placement sync: a Placement that never answers times out in one line, exit 1" {
        sim_mount nvidia-timesliced
        config_timesliced
        # accepts the connection and never answers
        python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
c = s.accept(); time.sleep(300)' "$BATS_TEST_TMPDIR/port" 3>&- &
        silent=$!
        for i in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.1; done
        port=$(cat "$BATS_TEST_TMPDIR/port")
        run -1 "$MH_CLI" placement sync --url "http://127.0.0.1:$port" --token admin --host slow1
        kill "$silent"
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: placement sync: cannot reach Placement at http://127.0.0.1:$port (GET /resource_providers?in_tree="*"): Operation timed out after "* ]]
        [ ! -e "$MDEV_HOOKS_ROOT/run/mdev-hooks/placement" ]
}

@test "placement sync --dry-run prints the writes and sends none" {
        sim_mount nvidia-timesliced
        config_timesliced
        before=$(pl_writes)
        run -0 sync dry1 --dry-run
        [[ "${lines[0]}" == "would send: PUT /resource_classes/CUSTOM_NVIDIA_36" ]]
        [[ "$output" == *'would send: POST /resource_providers {"name":"dry1_pci_0000_84_00_0",'* ]]
        [[ "${lines[-1]}" == "dry1: 5 providers, 0 guests with allocations: not in sync (dry run) (2 requests, 0 writes)" ]]
        [ "$(pl_writes)" -eq "$before" ]
        [ ! -e "$MDEV_HOOKS_ROOT/run/mdev-hooks/placement/dry1.json" ]
        run -0 pl_get "/resource_providers?name=dry1"
        [ "$(jq '.resource_providers | length' <<<"$output")" -eq 0 ]
}

@test "placement sync reads url and token_file from [placement], and refuses unknown keys there" {
        sim_mount nvidia-timesliced
        printf 'admin\n' > "$MDEV_HOOKS_ROOT/etc/mdev-hooks/token"
        chmod 600 "$MDEV_HOOKS_ROOT/etc/mdev-hooks/token"
        printf '[devices]\nenabled_mdev_types = nvidia-35\n[placement]\nurl = %s\ntoken_file = /etc/mdev-hooks/token\n' "$PL_URL" | config_write
        run -0 "$MH_CLI" placement sync --host conf1
        [[ "${lines[-1]}" == "conf1: 5 providers, 0 guests with allocations: synced ("* ]]
        printf '[placement]\nurl = %s\npassword = x\n' "$PL_URL" | config_write
        run -2 "$MH_CLI" placement sync --host conf1
        [[ "$output" == "/etc/mdev-hooks/mdev-hooks.conf:3: unknown key 'password' in [placement] (known: url, token_file)" ]]
        printf '[devices]\nenabled_mdev_types = nvidia-35\n' | config_write
        run -2 "$MH_CLI" placement sync --host conf1
        [[ "$output" == *"no Placement URL: give --url or set url in the [placement] section of /etc/mdev-hooks/mdev-hooks.conf" ]]
}

# The program behind `mdev-hooks placement sync` (the CLI execs it) runs
# under valgrind directly, so that the log is the one of the work.
@test "placement sync is clean under valgrind: first sync, at rest, dry run" {
        command -v valgrind >/dev/null || skip "valgrind is not installed (scripts/setup installs it)"
        if nm -A "$MH_CLI" 2>/dev/null | grep -q __asan_init || ldd "$MH_CLI" | grep -q libasan; then
                skip "sanitizer build: valgrind runs on the plain build"
        fi
        sim_mount nvidia-timesliced
        config_timesliced
        run -0 prepare vg1 "9a9a9a9a-0000-4000-8000-000000000001,type=nvidia-35"
        for args in "" "" "--dry-run" "--json"; do
                # shellcheck disable=SC2086
                run -0 valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=all \
                        --errors-for-leak-kinds=all --suppressions="$MH_SOURCE_DIR/tests/valgrind.supp" \
                        --log-file="$BATS_TEST_TMPDIR/vg.%p" "$(dirname "$MH_CLI")/mdev-hooks-placement" \
                        placement sync --url "$PL_URL" --token admin --host vg1 $args
        done
        run grep -lE 'ERROR SUMMARY: [1-9]|definitely lost|indirectly lost|possibly lost|still reachable|Invalid|uninitialised' "$BATS_TEST_TMPDIR"/vg.*
        [ "$status" -eq 1 ]   # no log holds one
        [ "$(ls "$BATS_TEST_TMPDIR"/vg.* | wc -l)" -eq 4 ]
}
