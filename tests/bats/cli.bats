#!/usr/bin/env bats
# The operator CLI `mdev-hooks` on plain fixture trees (tests/fixtures/):
# an NVIDIA M60 host (4 parents x 11 types), an A100 with 16 SR-IOV VFs and
# the kernel's mtty. Output is compared with golden files under
# tests/data/<cmd>/<case>.expected (MH_REGENERATE=1 rewrites them).

load common
bats_require_minimum_version 1.5.0

golden() {
        assert_golden "$MH_DATA/$1.expected" "$output"
}

# --- types ----------------------------------------------------------------

@test "types lists every parent of the NVIDIA host with its 11 types, sorted" {
        fixture_root nvidia
        run "$MH_CLI" types
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 45 ]      # header + 4 x 11
        golden types/nvidia
}

@test "types --json gives the same host as JSON" {
        fixture_root nvidia
        run "$MH_CLI" types --json
        [ "$status" -eq 0 ]
        golden types/nvidia-json
}

@test "types shows the 16 SR-IOV VFs, each with one instance per type until used" {
        fixture_root sriov
        run "$MH_CLI" types
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 97 ]      # header + 16 x 6
        golden types/sriov
}

@test "types shows mtty's types although it has no description file" {
        fixture_root mtty
        run "$MH_CLI" types
        [ "$status" -eq 0 ]
        golden types/mtty
        run "$MH_CLI" types --json
        [ "$status" -eq 0 ]
        golden types/mtty-json
}

@test "types on a host without mdev_bus lists nothing and succeeds" {
        mkdir -p "$BATS_TEST_TMPDIR/empty"
        MDEV_HOOKS_ROOT="$BATS_TEST_TMPDIR/empty" run "$MH_CLI" types --json
        [ "$status" -eq 0 ]
        golden types/empty-json
}

@test "types names the file of a malformed available_instances and fails" {
        fixture_root nvidia
        echo "many" > "$MDEV_HOOKS_ROOT/sys/devices/pci0000:80/0000:80:02.0/0000:85:00.0/mdev_supported_types/nvidia-40/available_instances"
        run "$MH_CLI" types
        [ "$status" -eq 1 ]
        [[ "$output" == *"'/sys/class/mdev_bus/0000:85:00.0/mdev_supported_types/nvidia-40/available_instances' does not hold a number: 'many'"* ]]
        # the other types are still listed
        [[ "$output" == *"0000:87:00.0  nvidia-45"* ]]
}

@test "types names a missing device_api file and fails" {
        fixture_root mtty
        rm "$MDEV_HOOKS_ROOT/sys/devices/virtual/mtty/mtty/mdev_supported_types/mtty-1/device_api"
        run "$MH_CLI" types
        [ "$status" -eq 1 ]
        [[ "$output" == *"cannot read '/sys/class/mdev_bus/mtty/mdev_supported_types/mtty-1/device_api'"* ]]
}

@test "types --parent shows only that parent, as mdevctl types --parent" {
        fixture_root nvidia
        run "$MH_CLI" types --parent 0000:85:00.0
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 12 ]      # header + 11
        golden types/nvidia-parent
        run "$MH_CLI" types -p 0000:85:00.0 --json
        [ "$status" -eq 0 ]
        golden types/nvidia-parent-json
        run --separate-stderr "$MH_CLI" types --parent 0000:99:00.0
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        run "$MH_CLI" types --parent 0000:99:00.0 --json
        [ "$(jq -c .parents <<<"$output")" = "[]" ]
        run "$MH_CLI" types --uuid 1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01
        [ "$status" -eq 2 ]
}

# --- list -----------------------------------------------------------------

@test "list joins sysfs and the record: assigned, free, incoming, foreign, lost" {
        fixture_root nvidia
        run "$MH_CLI" list
        [ "$status" -eq 0 ]
        golden list/nvidia
        run "$MH_CLI" list --json
        [ "$status" -eq 0 ]
        golden list/nvidia-json
}

# a lost record on 0000:84:00.0 whose UUID sorts last
add_late_record() {
        sed -e 's/5d0a3f7b-2c46-4e9d-9f58-8b4c0d6e2f05/ee0a3f7b-2c46-4e9d-9f58-8b4c0d6e2f0e/' -e 's/^parent = .*/parent = 0000:84:00.0/' \
                -e 's/^guest = .*/guest = db2/' "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/5d0a3f7b-2c46-4e9d-9f58-8b4c0d6e2f05" \
                > "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/ee0a3f7b-2c46-4e9d-9f58-8b4c0d6e2f0e"
}

@test "list groups its table by parent, as mdevctl list does; --json stays sorted by UUID" {
        fixture_root nvidia
        add_late_record
        run "$MH_CLI" list
        [ "$status" -eq 0 ]
        golden list/nvidia-by-parent
        run "$MH_CLI" list --json
        [ "$status" -eq 0 ]
        [ "$(jq -r '.mdevs[].uuid' <<<"$output" | sort -c && echo sorted)" = sorted ]
        [ "$(jq -r '.mdevs[-1].parent' <<<"$output")" = 0000:84:00.0 ]
}

@test "list --parent and --uuid filter as mdevctl's do, in both outputs" {
        fixture_root nvidia
        add_late_record
        run "$MH_CLI" list --parent 0000:84:00.0
        [ "$status" -eq 0 ]
        golden list/nvidia-parent
        run "$MH_CLI" list -p 0000:86:00.0 --json
        [ "$status" -eq 0 ]
        golden list/nvidia-parent-json
        # a UUID in upper case is the same UUID
        run "$MH_CLI" list --uuid 4C9F2E6A-1B35-4D8C-8E47-7A3B9C5D1E04
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 2 ]
        [[ "${lines[1]}" == "4c9f2e6a-1b35-4d8c-8e47-7a3b9c5d1e04  0000:86:00.0  nvidia-36  incoming  created  mig1" ]]
        # both filters together; a UUID on another parent matches nothing
        run "$MH_CLI" list -p 0000:86:00.0 -u 1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01 --json
        [ "$status" -eq 0 ]
        [ "$(jq -c .mdevs <<<"$output")" = "[]" ]
        run --separate-stderr "$MH_CLI" list --parent 0000:99:00.0
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        # not a UUID, not a name: bad usage
        run "$MH_CLI" list --uuid nope
        [ "$status" -eq 2 ]
        [[ "$output" == *"--uuid 'nope' is not a UUID"* ]]
        run "$MH_CLI" list --parent ../x
        [ "$status" -eq 2 ]
}

@test "list shows an mdev without a record as foreign, with no guest" {
        fixture_root nvidia
        run "$MH_CLI" list
        [[ "$output" == *"2a7d0c4e-9f13-4b6a-8c25-5e1f7a3b9c02  0000:85:00.0  nvidia-35  foreign   -        -"* ]]
}

@test "list shows a lost record although its mdev is not in sysfs" {
        fixture_root nvidia
        [ ! -e "$MDEV_HOOKS_ROOT/sys/bus/mdev/devices/5d0a3f7b-2c46-4e9d-9f58-8b4c0d6e2f05" ]
        run "$MH_CLI" list
        [[ "$output" == *"5d0a3f7b-2c46-4e9d-9f58-8b4c0d6e2f05  0000:87:00.0  nvidia-35  lost      created  db1"* ]]
}

@test "list shows a recorded mdev that vanished from sysfs as lost" {
        fixture_root mtty
        rm "$MDEV_HOOKS_ROOT/sys/bus/mdev/devices/8a3d6c0e-5f79-41c2-8c8b-1e7f3a9b5c08"
        run "$MH_CLI" list
        [ "$status" -eq 0 ]
        [[ "$output" == *"8a3d6c0e-5f79-41c2-8c8b-1e7f3a9b5c08  mtty    mtty-2  lost"*"serial1"* ]]
}

@test "list without a record directory shows every mdev as foreign" {
        fixture_root sriov
        rm -r "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks"
        run "$MH_CLI" list
        [ "$status" -eq 0 ]
        golden list/sriov-no-record
}

@test "list reports record files that do not parse and fails" {
        fixture_root mtty
        printf '[mdev]\nuuid = nonsense\n' > "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/9b4e7d1f-6a8b-42d3-9d9c-2f8a4b0c6d09"
        run "$MH_CLI" list
        [ "$status" -eq 1 ]
        [[ "$output" == *"1 record file(s) in /var/lib/mdev-hooks could not be read"* ]]
        [[ "$output" == *"8a3d6c0e-5f79-41c2-8c8b-1e7f3a9b5c08"* ]]
}

@test "list prints no terminal control characters from a guest name, JSON keeps it" {
        fixture_root mtty
        sed -i 's/^guest = serial1$/guest = evil%1b%5b31mred/' "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks/8a3d6c0e-5f79-41c2-8c8b-1e7f3a9b5c08"
        run "$MH_CLI" list
        [ "$status" -eq 0 ]
        [[ "$output" != *$'\e'* ]]
        [[ "$output" == *"evil?[31mred"* ]]
        run "$MH_CLI" list --json
        [[ "$output" == *'"guest": "evil\u001b[31mred"'* ]]
}

# --- inventory ---------------------------------------------------------------

@test "inventory counts existing + available per parent and zeroes the parent past max_instances" {
        fixture_root nvidia
        run "$MH_CLI" inventory
        [ "$status" -eq 0 ]
        golden inventory/nvidia
        run "$MH_CLI" inventory --json
        [ "$status" -eq 0 ]
        golden inventory/nvidia-json
}

@test "inventory counts every parent's existing mdevs before it caps, and a capped parent keeps them" {
        fixture_root nvidia
        # 0000:84:00.0 and 0000:85:00.0 hold one nvidia-35 each, 15 more fit on each.
        sed -i 's/^max_instances = 32$/max_instances = 17/' "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run "$MH_CLI" inventory --json
        [ "$status" -eq 0 ]
        # 2 exist, 15 fit: 84 gets its 15, 85 none (it keeps its 1), 87 none; 17 in all.
        [ "$(jq -c '[.parents[] | select(.type == "nvidia-35") | [.parent, .total, .used, .free, .status]]' <<<"$output")" == \
          '[["0000:84:00.0",16,1,15,"ok"],["0000:85:00.0",1,1,0,"capped"],["0000:87:00.0",0,0,0,"capped"]]' ]
        run "$MH_CLI" inventory --placement --hostname h
        [ "$status" -eq 0 ]
        # Nova deletes a provider without inventory: 87 has none; 85 keeps its used one.
        [ "$(jq -c '[.resource_providers[] | [.name, .inventories.CUSTOM_NVIDIA_35.total, .usages.CUSTOM_NVIDIA_35]] | .[0:3]' <<<"$output")" == \
          '[["h_pci_0000_84_00_0",16,1],["h_pci_0000_85_00_0",1,1],["h_pci_0000_86_00_0",null,null]]' ]
        [[ "$output" != *h_pci_0000_87_00_0* ]]
}

@test "inventory --placement prints Nova's resource providers" {
        fixture_root nvidia
        run "$MH_CLI" inventory --placement --hostname compute1
        [ "$status" -eq 0 ]
        golden inventory/nvidia-placement
        [[ "$output" == *'"name": "compute1_pci_0000_84_00_0"'* ]]
        [[ "$output" == *'"CUSTOM_MDEV_NVIDIA_36"'* ]]
}

@test "inventory --placement names a parent <host>_<subsystem>_<name> from its device's subsystem link, as libvirt" {
        fixture_root mtty
        local dev="$MDEV_HOOKS_ROOT/sys/devices/virtual/mtty/mtty"
        # Without the link (this fixture): from the name's kind, mtty_mtty.
        run "$MH_CLI" inventory --placement --hostname h
        [[ "$output" == *'"name": "h_mtty_mtty"'* ]]
        # The kernel's link is read: another class gives another name.
        ln -s ../../../../class/mdpy "$dev/subsystem"
        run "$MH_CLI" inventory --placement --hostname h
        [ "$status" -eq 0 ]
        [[ "$output" == *'"name": "h_mdpy_mtty"'* ]]
}

@test "inventory on 16 SR-IOV VFs with max_instances 12 reports 0 for the last 4" {
        fixture_root sriov
        run "$MH_CLI" inventory
        [ "$status" -eq 0 ]
        golden inventory/sriov
        [ "$(grep -c 'would pass max_instances = 12' <<<"$output")" -eq 4 ]
        run "$MH_CLI" inventory --placement --hostname compute2
        [ "$status" -eq 0 ]
        golden inventory/sriov-placement
}

@test "inventory on mtty" {
        fixture_root mtty
        run "$MH_CLI" inventory
        [ "$status" -eq 0 ]
        golden inventory/mtty
        run "$MH_CLI" inventory --placement --hostname compute3
        [ "$status" -eq 0 ]
        golden inventory/mtty-placement
}

@test "inventory lists a parent that does not offer its configured type, with the reason" {
        fixture_root mtty
        printf '[devices]\nenabled_mdev_types = mtty-4\n' | config_write
        run "$MH_CLI" inventory
        [ "$status" -eq 0 ]
        [[ "$output" == *"mtty    mtty-4  VGPU       0     0     0  does not offer mtty-4"* ]]
        run "$MH_CLI" inventory --json
        [[ "$output" == *'"status": "not-offered"'* ]]
        run "$MH_CLI" inventory --placement --hostname h
        [[ "$output" != *'"name"'* ]]
}

@test "inventory without a config lists every parent without a type" {
        fixture_root nvidia
        rm "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run "$MH_CLI" inventory
        [ "$status" -eq 0 ]
        golden inventory/nvidia-no-config
}

@test "inventory refuses a bad config with exit 2 and every error" {
        fixture_root nvidia
        printf '[devices]\nenabled_mdev_types = nvidia-35\n[mdev_nvidia-35]\nmax_instances = 0\nmdev_class = gpu\n' | config_write
        run "$MH_CLI" inventory
        [ "$status" -eq 2 ]
        [[ "${lines[0]}" == "/etc/mdev-hooks/mdev-hooks.conf:4: max_instances must be an integer >= 1, not '0'" ]]
        [[ "${lines[1]}" == "/etc/mdev-hooks/mdev-hooks.conf:5: mdev_class must be VGPU or CUSTOM_[A-Z0-9_]+ of at most 255 characters, not 'gpu'" ]]
}

@test "inventory --json and --placement exclude each other" {
        fixture_root nvidia
        run "$MH_CLI" inventory --json --placement
        [ "$status" -eq 2 ]
}

# --- check-config --------------------------------------------------------------

@test "check-config passes the fixtures' configs" {
        for f in nvidia sriov mtty; do
                rm -rf "$BATS_TEST_TMPDIR/root"
                fixture_root $f
                run "$MH_CLI" check-config
                [ "$status" -eq 0 ]
                [ "$output" = "/etc/mdev-hooks/mdev-hooks.conf: ok" ]
        done
}

@test "check-config accepts parents by their libvirt node-device names, as Nova's configs write them" {
        fixture_root mtty
        printf '[devices]\nenabled_mdev_types = mtty-2\n[mdev_mtty-2]\ndevice_addresses = mtty_mtty\n' \
                > "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run "$MH_CLI" check-config
        [ "$status" -eq 0 ]
        [ "$output" = "/etc/mdev-hooks/mdev-hooks.conf: ok" ]
        run "$MH_CLI" inventory --json
        [ "$(jq -c '[.parents[] | [.parent, .type, .status]]' <<<"$output")" = '[["mtty","mtty-2","ok"]]' ]
        rm -rf "$BATS_TEST_TMPDIR/root"
        fixture_root nvidia
        sed -i 's/^device_addresses = 0000:84:00.0, 0000:85:00.0, 0000:87:00.0$/device_addresses = pci_0000_84_00_0, pci_0000_85_00_0, 0000:87:00.0/' \
                "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        grep -q pci_0000_85_00_0 "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run "$MH_CLI" check-config
        [ "$status" -eq 0 ]
        run "$MH_CLI" inventory
        golden inventory/nvidia
}

@test "check-config without a config says so and succeeds" {
        fixture_root mtty
        rm "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run "$MH_CLI" check-config
        [ "$status" -eq 0 ]
        [ "$output" = "/etc/mdev-hooks/mdev-hooks.conf: not present: no mdev types enabled" ]
}

@test "check-config prints every config error with its line and exits 2" {
        fixture_root nvidia
        cp "$MH_DATA/check-config/bad.conf" "$BATS_TEST_TMPDIR/bad.conf"
        run "$MH_CLI" check-config --config "$BATS_TEST_TMPDIR/bad.conf"
        [ "$status" -eq 2 ]
        output="${output//$BATS_TEST_TMPDIR/TMP}"
        golden check-config/bad
}

@test "check-config checks the config against the host" {
        fixture_root nvidia
        cp "$MH_DATA/check-config/host.conf" "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        rm -r "$MDEV_HOOKS_ROOT/sys/devices/pci0000:80/0000:80:04.0/0000:87:00.0/mdev_supported_types/nvidia-45"
        run "$MH_CLI" check-config
        [ "$status" -eq 2 ]
        golden check-config/host
        run "$MH_CLI" check-config --json
        [ "$status" -eq 2 ]
        golden check-config/host-json
}

@test "check-config tells a device that is not (yet) an mdev parent from an absent one" {
        fixture_root nvidia
        rm "$MDEV_HOOKS_ROOT/sys/class/mdev_bus/0000:85:00.0"
        run "$MH_CLI" check-config
        [ "$status" -eq 2 ]
        [ "$output" = "/etc/mdev-hooks/mdev-hooks.conf:6: '0000:85:00.0' in device_addresses of nvidia-35 is a device here but not a registered mdev parent (no /sys/class/mdev_bus/0000:85:00.0): is its vGPU driver loaded?" ]
}

@test "check-config refuses a world-writable config, naming it" {
        fixture_root mtty
        chmod o+w "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run "$MH_CLI" check-config
        [ "$status" -eq 2 ]
        [[ "$output" == "/etc/mdev-hooks/mdev-hooks.conf: is world-writable"* ]]
        # and so does every other command that reads it
        run "$MH_CLI" inventory
        [ "$status" -eq 2 ]
        [[ "$output" == *"world-writable"* ]]
}

@test "check-config refuses a config not owned by root when run as root" {
        [ "$(id -u)" -eq 0 ] || skip "needs root"
        fixture_root mtty
        chown 65534 "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf"
        run "$MH_CLI" check-config
        [ "$status" -eq 2 ]
        [[ "$output" == "/etc/mdev-hooks/mdev-hooks.conf: is owned by uid 65534, not root"* ]]
}

@test "a missing --config file is a bad config, named" {
        fixture_root mtty
        run "$MH_CLI" --config /nonexistent.conf check-config
        [ "$status" -eq 2 ]
        [[ "$output" == "/nonexistent.conf: cannot open: No such file or directory" ]]
        run "$MH_CLI" --config /nonexistent.conf inventory
        [ "$status" -eq 2 ]
        [[ "$output" == "/nonexistent.conf: cannot open: No such file or directory" ]]
}

@test "--config before or after the command reads that file" {
        fixture_root mtty
        printf '[devices]\nenabled_mdev_types = mtty-1\n' > "$BATS_TEST_TMPDIR/other.conf"
        run "$MH_CLI" --config "$BATS_TEST_TMPDIR/other.conf" inventory
        [ "$status" -eq 0 ]
        [[ "$output" == *"mtty    mtty-1  VGPU"* ]]
        run "$MH_CLI" inventory --config "$BATS_TEST_TMPDIR/other.conf"
        [ "$status" -eq 0 ]
        [[ "$output" == *"mtty    mtty-1  VGPU"* ]]
}

# --- usage ----------------------------------------------------------------------

@test "--help for the program and every command exits 0" {
        run "$MH_CLI" --help
        [ "$status" -eq 0 ]
        [[ "$output" == *"Usage: mdev-hooks"* ]]
        local usage="$output"
        for c in types list inventory check-config metrics placement; do
                [[ "$usage" == *"  $c "* ]]
                run "$MH_CLI" "$c" --help
                [ "$status" -eq 0 ]
                [[ "${lines[0]}" == "Usage: mdev-hooks $c"* ]]
                run "$MH_CLI" help "$c"
                [ "$status" -eq 0 ]
                [[ "${lines[0]}" == "Usage: mdev-hooks $c"* ]]
        done
}

@test "bad usage exits 2" {
        run "$MH_CLI"
        [ "$status" -eq 2 ]
        run "$MH_CLI" frobnicate
        [ "$status" -eq 2 ]
        [[ "$output" == *"unknown command 'frobnicate'"* ]]
        run "$MH_CLI" types --placement
        [ "$status" -eq 2 ]
        run "$MH_CLI" list extra
        [ "$status" -eq 2 ]
        run "$MH_CLI" --bogus types
        [ "$status" -eq 2 ]
        # an option another command takes is named, not its argument
        run -2 --separate-stderr "$MH_CLI" types --uuid b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01
        [[ "$stderr" == *"types: unknown option or missing argument '--uuid'"* ]]
        run -2 --separate-stderr "$MH_CLI" list --hostname=h1
        [[ "$stderr" == *"list: unknown option or missing argument '--hostname=h1'"* ]]
}

@test "pick and placement sync parse their options as every command does: help, version, bad usage" {
        run -0 "$MH_CLI" pick --help
        [[ "$output" == "Usage: mdev-hooks pick TYPE [--numa-node N] [--xml]"* ]]
        run -0 "$MH_CLI" placement --help
        [[ "$output" == "Usage: mdev-hooks placement sync "* ]]
        run -0 "$MH_CLI" placement sync --help
        [[ "$output" == "Usage: mdev-hooks placement sync "* ]]
        run -0 "$MH_CLI" pick --version
        [[ "$output" == "mdev-hooks "* ]]
        run -0 "$MH_CLI" placement --version
        [[ "$output" == "mdev-hooks "* ]]
        # pick: one TYPE; its own --xml, not the options of other commands
        run -2 --separate-stderr "$MH_CLI" pick
        [[ "$stderr" == "Usage: mdev-hooks pick TYPE [--numa-node N] [--xml]"* ]]
        run -2 --separate-stderr "$MH_CLI" pick nvidia-1150 nvidia-1155
        [[ "$stderr" == "Usage: mdev-hooks pick TYPE [--numa-node N] [--xml]"* ]]
        run -2 --separate-stderr "$MH_CLI" pick --bogus nvidia-1150
        [ "$stderr" = "mdev-hooks: pick: unknown option or missing argument '--bogus'; see 'mdev-hooks pick --help'" ]
        run -2 --separate-stderr "$MH_CLI" pick --json nvidia-1150
        [[ "$stderr" == *"pick: unknown option or missing argument '--json'"* ]]
        # placement: the action first, then its options
        run -2 --separate-stderr "$MH_CLI" placement
        [[ "$stderr" == *"placement: missing action; see 'mdev-hooks placement --help'" ]]
        run -2 --separate-stderr "$MH_CLI" placement --json
        [[ "$stderr" == *"placement: missing action"* ]]
        run -2 --separate-stderr "$MH_CLI" placement frob
        [[ "$stderr" == *"placement: unknown action 'frob' (known: sync)"* ]]
        run -2 --separate-stderr "$MH_CLI" placement sync --bogus
        [[ "$stderr" == *"placement sync: unknown option or missing argument '--bogus'"* ]]
        run -2 --separate-stderr "$MH_CLI" placement sync --url
        [[ "$stderr" == *"placement sync: unknown option or missing argument '--url'"* ]]
        run -2 --separate-stderr "$MH_CLI" placement sync --parent 0000:84:00.0
        [[ "$stderr" == *"placement sync: unknown option or missing argument '--parent'"* ]]
        run -2 --separate-stderr "$MH_CLI" placement sync extra
        [[ "$stderr" == *"placement sync: unexpected argument 'extra'"* ]]
}

# --- the example config -------------------------------------------------------------

@test "the installed example config is valid as it is" {
        fixture_root mtty
        run "$MH_CLI" check-config --config "$MH_SOURCE_DIR/conf/mdev-hooks.conf"
        [ "$status" -eq 0 ]
}

@test "the example config with every option uncommented is valid" {
        fixture_root nvidia
        sed -E 's/^#([a-z0-9_:.]+ *=|\[)/\1/; s/^#(    0000)/\1/' "$MH_SOURCE_DIR/conf/mdev-hooks.conf" > "$BATS_TEST_TMPDIR/all.conf"
        # every option of config.h is there
        for k in enabled_mdev_types device_addresses max_instances mdev_class release placement lock_timeout parent_wait recreate command '0000:41:00.0' url token_file; do
                grep -q "^$k *=" "$BATS_TEST_TMPDIR/all.conf"
        done
        run "$MH_CLI" inventory --config "$BATS_TEST_TMPDIR/all.conf"
        [ "$status" -eq 0 ]
        [[ "$output" == *"0000:87:00.0  nvidia-36  CUSTOM_NVIDIA_36"* ]]
}
