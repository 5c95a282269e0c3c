#!/usr/bin/env bats
# `mdev-hooks attach` and `detach` (doc/design.md §3, "CLI, guests") with
# libvirt's test driver and the sysfs simulator. The test driver keeps its
# guests in the memory of the process that opened it, so each test runs its
# steps in one tests/virt-shell, which holds test:///default open and runs
# the real commands inside it (virt-shell.c).

load hook-helpers
load libvirt-node
load whole-helpers

NS=http://mdev-hooks.org/xmlns/domain/1.0
NOVA=http://openstack.org/xmlns/libvirt/nova/1.1
VF1=0000:41:00.4
VF2=0000:41:00.5
Q4=1150 # NVIDIA L40S-4Q in nvidia-vfio

setup() {
        hook_setup nvidia-timesliced
        config_timesliced
        export LIBVIRT_DEFAULT_URI=test:///default
        VS="$MH_BUILD_DIR/tests/virt-shell"
}

# guest NAME [HOSTDEV_XML]: a defined guest with Nova's and libosinfo's
# metadata, as $BATS_TEST_TMPDIR/NAME.xml.
guest() {
        cat > "$BATS_TEST_TMPDIR/$1.xml" <<EOF
<domain type='test'>
  <name>$1</name>
  <uuid>$(printf '%s' "$1" | md5sum | sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12}).*/\1-\2-4\3-8\4-\5/')</uuid>
  <metadata>
    <nova:instance xmlns:nova="$NOVA">
      <nova:name>a  name with   spaces &amp; an entity</nova:name>
      <nova:flavor name="vgpu.small"><nova:memory>4096</nova:memory></nova:flavor>
    </nova:instance>
    <libosinfo:libosinfo xmlns:libosinfo="http://libosinfo.org/xmlns/libvirt/domain/1.0">
      <libosinfo:os id="http://debian.org/debian/12"/>
    </libosinfo:libosinfo>
  </metadata>
  <memory unit='KiB'>1048576</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
  <devices>
${2:-}
  </devices>
</domain>
EOF
}

# vs ARGS...: tests/virt-shell (";" separates its commands).
vs() {
        run "$VS" "$@"
        echo "$output"
}

# strip_ours: the XML on stdin without this project's element and hostdevs.
strip_ours() {
        sed -e '/<mh:mdevs/,/<\/mh:mdevs>/d' -e '/<hostdev/,/<\/hostdev>/d'
}

# xml_after: the last domain XML in the last output (a "dumpxml" step).
xml_after() {
        awk '/^<domain/ { buf = ""; on = 1 } on { buf = buf $0 "\n" } /^<\/domain>/ { on = 0; last = buf } END { printf "%s", last }' <<< "$output"
}

@test "attach adds an mdev hostdev and its metadata entry to a defined guest, every other byte kept" {
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; dumpxml web1 --inactive
        before="$(xml_after)"
        snap="$(host_snapshot)"
        sim_counters_reset

        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 nvidia-35 \; dumpxml web1 --inactive
        [ "$status" -eq 0 ]
        [[ "$output" == *"[exit 0]"* ]]
        after="$(xml_after)"
        # one hostdev, one entry, with one UUID
        uuid="$(sed -n "s#.*<address uuid='\([0-9a-f-]*\)'/>.*#\1#p" <<< "$after")"
        [ "$(wc -l <<< "$uuid")" -eq 1 ]
        [[ "$after" == *"<mh:mdev uuid=\"$uuid\" type=\"nvidia-35\"/>"* ]]
        [[ "$output" == *"added mdev $uuid (nvidia-35) to 'web1': its definition"* ]]
        # Nova's and libosinfo's metadata, and everything else, byte for byte
        diff <(printf '%s\n' "$before") <(printf '%s\n' "$after" | strip_ours)
        # a definition alone: nothing made, nothing recorded
        [ "$(host_snapshot)" = "$snap" ]
        [ "$(sim_counter_total writes)" -eq 0 ]

        # and the hook's prepare makes it, with that type
        printf '%s\n' "$after" > "$BATS_TEST_TMPDIR/web1-after.xml"
        run hook web1 prepare begin - < "$BATS_TEST_TMPDIR/web1-after.xml"
        [ "$status" -eq 0 ]
        [ "$(mdev_type "$uuid")" = nvidia-35 ]
        assert_record_matches_sysfs "$uuid" web1
}

@test "attach --class --count N --parent P adds N hostdevs, their entries naming the class and pinning P" {
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 --class CUSTOM_NVIDIA_36 --count 2 \
                --parent 0000:87:00.0 \; dumpxml web1 --inactive
        [[ "$output" == *"[exit 0]"* ]]
        after="$(xml_after)"
        [ "$(grep -c "<hostdev mode='subsystem' type='mdev'" <<< "$after")" -eq 2 ]
        [ "$(grep -c 'class="CUSTOM_NVIDIA_36" parent="0000:87:00.0"/>' <<< "$after")" -eq 2 ]
        printf '%s\n' "$after" > "$BATS_TEST_TMPDIR/web1-after.xml"
        run hook web1 prepare begin - < "$BATS_TEST_TMPDIR/web1-after.xml"
        [ "$status" -eq 0 ]
        for u in $(sed -n "s#.*<address uuid='\([0-9a-f-]*\)'/>.*#\1#p" <<< "$after"); do
                [ "$(mdev_parent "$u")" = 0000:87:00.0 ]
                [ "$(mdev_type "$u")" = nvidia-36 ]
        done
}

@test "attach finds the guest by UUID and takes the URI from -c as from LIBVIRT_DEFAULT_URI" {
        guest web1
        gu="$(sed -n 's#.*<uuid>\(.*\)</uuid>.*#\1#p' "$BATS_TEST_TMPDIR/web1.xml")"
        unset LIBVIRT_DEFAULT_URI
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach "$gu" nvidia-35 -c test:///default \; \
                mdev-hooks attach web1 nvidia-35 --connect test:///default
        [ "$(grep -c '^\[exit 0\]' <<< "$output")" -eq 2 ]
        [ "$(grep -c "^added mdev .* to 'web1': its definition" <<< "$output")" -eq 2 ]
}

@test "after attach, --config FILE is the config and -c the URI" {
        guest web1
        printf '[devices]\nenabled_mdev_types = nvidia-36\n' > "$BATS_TEST_TMPDIR/other.conf"
        unset LIBVIRT_DEFAULT_URI
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 nvidia-35 -c test:///default \
                --config "$BATS_TEST_TMPDIR/other.conf"
        [[ "$output" == *"[exit 1]"* ]]
        [ "$(grep -c '^mdev-hooks: web1: type nvidia-35 is not enabled in the config (enabled: nvidia-36)' <<< "$output")" -eq 1 ]
}

# refused_attach ARGS...: attach ARGS... on a fresh web1 must exit 1 with one
# line "mdev-hooks: web1: ...", and change neither the definition, nor the
# record, nor sysfs.
refused_attach() {
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; dumpxml web1 --inactive
        before="$(xml_after)"
        snap="$(host_snapshot)"
        sim_counters_reset
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 "$@" \; dumpxml web1 --inactive
        [ "$status" -eq 0 ]
        [[ "$output" == *"[exit 1]"* ]]
        refusal="$(grep '^mdev-hooks: ' <<< "$output")"
        [ "$(wc -l <<< "$refusal")" -eq 1 ]
        [[ "$refusal" == "mdev-hooks: web1: "* ]]
        [ "$(xml_after)" = "$before" ]
        [ "$(host_snapshot)" = "$snap" ]
        [ "$(sim_counter_total writes)" -eq 0 ]
}

@test "attach refuses a type the config does not enable, in one line, changing nothing" {
        refused_attach nvidia-45
        [[ "$refusal" == *"type nvidia-45 is not enabled in the config (enabled: nvidia-35, nvidia-36)"* ]]
}

@test "attach refuses when the host has no room for the type, naming each parent, changing nothing" {
        config_types nvidia-45 "$P86"
        sim_create $P86 nvidia-45 "$U1"
        refused_attach nvidia-45
        [[ "$refusal" == *"no capacity for nvidia-45: $P86 has 0 of 1 left"* ]]
}

@test "attach refuses more than the room there is, saying how many would fit" {
        config_types nvidia-45 "$P86"
        refused_attach nvidia-45 --count 2
        [[ "$refusal" == *"no capacity for nvidia-45"*"(room for 1 of the 2 asked for)"* ]]
}

@test "attach --live refuses a guest that is not running, changing nothing" {
        refused_attach nvidia-35 --live
        [[ "$refusal" == *"is not running; without --live"* ]]
}

@test "attach and detach refuse bad usage with exit 2" {
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 \; mdev-hooks attach web1 nvidia-35 --count 0 \; \
                mdev-hooks attach web1 nvidia-35 --persistent \; mdev-hooks attach web1 ../x \; mdev-hooks detach web1 \; \
                mdev-hooks detach web1 --all --timeout 0
        [ "$(grep -c '^\[exit 2\]' <<< "$output")" -eq 6 ]
}

@test "detach takes an mdev's hostdev and entry from the definition, every other byte kept" {
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; dumpxml web1 --inactive
        before="$(xml_after)"
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 nvidia-35 --count 2 \; dumpxml web1 --inactive
        two="$(xml_after)"
        u1="$(sed -n "s#.*<address uuid='\([0-9a-f-]*\)'/>.*#\1#p" <<< "$two" | head -n1)"
        u2="$(sed -n "s#.*<address uuid='\([0-9a-f-]*\)'/>.*#\1#p" <<< "$two" | tail -n1)"
        printf '%s\n' "$two" > "$BATS_TEST_TMPDIR/two.xml"

        vs define "$BATS_TEST_TMPDIR/two.xml" \; mdev-hooks detach web1 "${u1^^}" \; dumpxml web1 --inactive
        [[ "$output" == *"removed mdev $u1 (nvidia-35) from 'web1': its definition"* ]]
        after="$(xml_after)"
        [[ "$after" != *"$u1"* ]]
        [[ "$after" == *"<address uuid='$u2'/>"* ]]
        [[ "$after" == *"<mh:mdev uuid=\"$u2\" type=\"nvidia-35\"/>"* ]]

        vs define "$BATS_TEST_TMPDIR/two.xml" \; mdev-hooks detach web1 --all \; dumpxml web1 --inactive
        [ "$(grep -c '^removed mdev' <<< "$output")" -eq 2 ]
        # our element goes with its last entry: the rest as it was
        [ "$(xml_after)" = "$before" ]
}

@test "detach refuses a UUID the guest does not have, in one line, changing nothing" {
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; dumpxml web1 --inactive
        before="$(xml_after)"
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks detach web1 "$U1" \; dumpxml web1 --inactive
        [[ "$output" == *"[exit 1]"* ]]
        [ "$(grep -c '^mdev-hooks: ' <<< "$output")" -eq 1 ]
        [ "$(grep -c '^mdev-hooks: web1: the guest has no mdev' <<< "$output")" -eq 1 ]
        [ "$(xml_after)" = "$before" ]
}

@test "attach --live claims as prepare does and undoes the claim when libvirt refuses the hot-plug" {
        guest web1
        # the test driver has no hot-plug: it refuses every one
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; start web1 \; metadata web1 "$NS" --live \; \
                mdev-hooks attach web1 nvidia-35 --live \; metadata web1 "$NS" --live
        [[ "$output" == *"[exit 1]"* ]]
        [ "$(grep -c '^mdev-hooks: web1: libvirt refused to hot-plug mdev .* (nvidia-35): .*; its claim is undone$' <<< "$output")" -eq 1 ]
        # the claim was made (the record names web1) and undone: no mdev, no record
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
        [ "$(sim_counter_total writes)" -ge 2 ] # create, then remove
        # the running guest's metadata as it was
        [ "$(grep -c '^(none)$' <<< "$output")" -eq 2 ]
}

@test "attach --live that cannot take the hooks' lock says who holds it, and takes its metadata entry back" {
        config_timesliced '[hooks]' 'lock_timeout = 1'
        lock_hold "$MDEV_HOOKS_ROOT/run/mdev-hooks/lock" "prepare db1"
        guest web1
        sim_counters_reset
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; start web1 \; mdev-hooks attach web1 nvidia-35 --live \; \
                metadata web1 "$NS" --live
        lock_let_go
        [[ "$output" == *"[exit 1]"* ]]
        [ "$(grep -c '^mdev-hooks: web1: .*prepare db1' <<< "$output")" -eq 1 ]
        [ "$(grep -c '^(none)$' <<< "$output")" -eq 1 ]
        [ "$(sim_counter_total writes)" -eq 0 ]
        [ -z "$(records)" ]
}

@test "attach --live refuses in one line when the host has no room, and makes nothing" {
        config_types nvidia-45 "$P86"
        sim_create $P86 nvidia-45 "$U1"
        guest web1
        sim_counters_reset
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; start web1 \; mdev-hooks attach web1 nvidia-45 --live
        [[ "$output" == *"[exit 1]"* ]]
        [ "$(grep -c "^mdev-hooks: web1: no capacity for nvidia-45: $P86 has 0 of 1 left" <<< "$output")" -eq 1 ]
        [ "$(sim_counter_total writes)" -eq 0 ]
        [ -z "$(records)" ]
}

@test "killed after its claim, attach --live leaves a claim on the running guest that reconcile --apply removes" {
        needs_crashpoints
        guest plain
        MDEV_HOOKS_CRASH_AT=attach-after-claim vs define "$BATS_TEST_TMPDIR/plain.xml" \; start plain \; \
                mdev-hooks attach plain nvidia-35 --live
        [ "$status" -eq 137 ]
        u="$(records)"
        [ -n "$u" ]
        [ "$(record_get "$u" guest)" = plain ]
        [ "$(record_get "$u" state)" = assigned ]
        [ "$(record_get "$u" origin)" = created ]
        mdev_exists "$u"
        # libvirt's side: plain runs without it (the hot-plug never came)
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" plain)"
        run "$MH_CLI" reconcile --connect "$uri" --apply
        echo "$output"
        [[ "$output" == *"$u unused"*"done"* ]]
        mdev_absent "$u"
        [ -z "$(records)" ]
}

@test "killed after the metadata, attach leaves an entry without a hostdev, which prepare ignores" {
        needs_crashpoints
        guest web1
        MDEV_HOOKS_CRASH_AT=attach-after-metadata vs define "$BATS_TEST_TMPDIR/web1.xml" \; \
                mdev-hooks attach web1 nvidia-35
        [ "$status" -eq 137 ]
        [ -z "$(records)" ]
        [ -z "$(sim_mdevs)" ]
        # what the definition is then: the entry, no hostdev
        sed "s#</nova:instance>#</nova:instance><mh:mdevs xmlns:mh='$NS'><mh:mdev uuid='$U1' type='nvidia-35'/></mh:mdevs>#" \
                "$BATS_TEST_TMPDIR/web1.xml" > "$BATS_TEST_TMPDIR/crashed.xml"
        run hook web1 prepare begin - < "$BATS_TEST_TMPDIR/crashed.xml"
        [ "$status" -eq 0 ]
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
}

# --- vGPUs of NVIDIA's VFIO framework --------------------------------------

vfio_setup() {
        sim_umount
        hook_setup nvidia-vfio
        config_types "nvidia-$Q4" "0000:41:00.0"
}

@test "attach gives a VF vGPU the VF pick chooses, with its <mh:vgpu> entry" {
        vfio_setup
        want="$("$MH_CLI" pick "nvidia-$Q4")"
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 "nvidia-$Q4" \; dumpxml web1 --inactive
        [[ "$output" == *"added vGPU $want (nvidia-$Q4) to 'web1': its definition"* ]]
        after="$(xml_after)"
        [[ "$after" == *"<mh:vgpu pci=\"$want\" type=\"nvidia-$Q4\"/>"* ]]
        [[ "$after" == *"<hostdev mode='subsystem' type='pci' managed='no'>"* ]]
        [[ "$after" == *"<address domain='0x0000' bus='0x41' slot='0x00' function='0x${want: -1}'/>"* ]]
        # nothing programmed until the guest starts
        [ "$(sim_vf_type "$want")" = 0 ]
        printf '%s\n' "$after" > "$BATS_TEST_TMPDIR/web1-after.xml"
        run hook web1 prepare begin - < "$BATS_TEST_TMPDIR/web1-after.xml"
        [ "$status" -eq 0 ]
        [ "$(sim_vf_type "$want")" = "$Q4" ]
}

@test "attach never gives a VF that another guest's definition names" {
        vfio_setup
        guest web2 "<hostdev mode='subsystem' type='pci' managed='no'><source><address domain='0x0000' bus='0x41' slot='0x00' function='0x4'/></source></hostdev>"
        guest web1
        vs define "$BATS_TEST_TMPDIR/web2.xml" \; define "$BATS_TEST_TMPDIR/web1.xml" \; \
                mdev-hooks attach web1 "nvidia-$Q4" --count 2 \; dumpxml web1 --inactive
        [[ "$output" == *"[exit 0]"* ]]
        after="$(xml_after)"
        [ "$(grep -c '<mh:vgpu pci=' <<< "$after")" -eq 2 ]
        [[ "$after" != *"pci=\"$VF1\""* ]]
        [[ "$after" == *"pci=\"$VF2\""* ]]
}

@test "attach gives a vGPU of a third kind through the backend table (the test build's fake backend)" {
        needs_crashpoints
        sim_umount
        hook_setup fake-vf
        config_types nvidia-1150 0000:41:00.0 fake-7 0000:a1:00.0
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 fake-7 \; \
                mdev-hooks attach web1 nvidia-1150 \; dumpxml web1 --inactive
        [[ "$output" == *"added vGPU 0000:a1:00.4 (fake-7) to 'web1': its definition"* ]]
        [[ "$output" == *"added vGPU $VF1 (nvidia-1150) to 'web1': its definition"* ]]
        after="$(xml_after)"
        [[ "$after" == *'<mh:vgpu pci="0000:a1:00.4" type="fake-7"/>'* ]]
        printf '%s\n' "$after" > "$BATS_TEST_TMPDIR/web1-after.xml"
        run hook web1 prepare begin - < "$BATS_TEST_TMPDIR/web1-after.xml"
        [ "$status" -eq 0 ]
        [ "$(cat "$SIM_SYS/bus/pci/devices/0000:a1:00.4/fakegpu/current_type")" = 7 ]
        [ "$(sim_vf_type "$VF1")" = 1150 ]
}

@test "attach --parent takes a VF of that GPU or that VF" {
        vfio_setup
        config_types "nvidia-$Q4" "0000:41:00.0, 0000:c1:00.0"
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 "nvidia-$Q4" --parent 0000:c1:00.0 \; \
                mdev-hooks attach web1 "nvidia-$Q4" --parent 0000:41:00.6
        [[ "$output" == *"added vGPU 0000:c1:00."*" (nvidia-$Q4)"* ]]
        [[ "$output" == *"added vGPU 0000:41:00.6 (nvidia-$Q4)"* ]]
}

# whole_setup: a host with an AMD GPU in DPX (VFs 0000:c2:00.4 and .5) and
# an Intel GPU with two 8 GiB VFs (0000:03:00.4 and .5), beside an mdev GPU.
AVF1=0000:c2:00.4
AVF2=0000:c2:00.5
XVF1=0000:03:00.4
XVF2=0000:03:00.5
whole_setup() {
        sim_umount
        hook_setup amd-intel
        config_types nvidia-35 0000:84:00.0 amd-mxgpu-2 0000:c2:00.0 intel-xe-8192 0000:03:00.0
}

@test "attach gives AMD and Intel VFs whole, as managed hostdevs of the VFs pick names, and prepare takes them" {
        whole_setup
        amd="$("$MH_CLI" pick amd-mxgpu-2)"
        xe="$("$MH_CLI" pick intel-xe-8192)"
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 amd-mxgpu-2 \; \
                mdev-hooks attach web1 intel-xe-8192 \; dumpxml web1 --inactive
        [[ "$output" == *"added VF $amd (amd-mxgpu-2) to 'web1': its definition"* ]]
        [[ "$output" == *"added VF $xe (intel-xe-8192) to 'web1': its definition"* ]]
        after="$(xml_after)"
        [ "$(grep -c "<hostdev mode='subsystem' type='pci' managed='yes'>" <<< "$after")" -eq 2 ]
        [ "$(grep -c "managed='no'" <<< "$after")" -eq 0 ]
        [[ "$after" == *"<mh:vgpu pci=\"$amd\" type=\"amd-mxgpu-2\"/>"* ]]
        [[ "$after" == *"<mh:vgpu pci=\"$xe\" type=\"intel-xe-8192\"/>"* ]]
        [[ "$after" == *"<address domain='0x0000' bus='0xc2' slot='0x00' function='0x${amd: -1}'/>"* ]]
        # nothing is claimed until the guest starts
        record_absent "$amd"
        record_absent "$xe"
        printf '%s\n' "$after" > "$BATS_TEST_TMPDIR/web1-after.xml"
        run hook web1 prepare begin - < "$BATS_TEST_TMPDIR/web1-after.xml"
        [ "$status" -eq 0 ]
        [ "$(record_get "$amd" guest)" = web1 ]
        [ "$(record_get "$xe" guest)" = web1 ]
}

@test "attach gives a guest pinned to NUMA node 1 the VFs pick --numa-node 1 names, of every VF kind" {
        local t want got
        sim_umount
        hook_setup numa
        config_types nvidia-1150 "0000:42:00.0, 0000:c2:00.0" amd-mxgpu-2 "0000:43:00.0, 0000:c3:00.0" \
                intel-xe-8192 "0000:44:00.0, 0000:c4:00.0"
        guest web1
        sed -i "s|^  <devices>|  <numatune>\n    <memory mode='strict' nodeset='1'/>\n  </numatune>\n  <devices>|" \
                "$BATS_TEST_TMPDIR/web1.xml"
        for t in nvidia-1150 amd-mxgpu-2 intel-xe-8192; do
                want="$("$MH_CLI" pick "$t" --numa-node 1)"
                [ "$(cat "$SIM_SYS/bus/pci/devices/$want/numa_node")" = 1 ]
                [ "$want" != "$("$MH_CLI" pick "$t")" ]
                vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 "$t" \; dumpxml web1 --inactive
                got=$(xml_after | sed -nE "s/.*<mh:vgpu pci=\"([^\"]+)\" type=\"$t\".*/\1/p")
                [ "$got" = "$want" ] || { echo "$t: attach gave '$got', pick --numa-node 1 '$want'"; return 1; }
        done
}

@test "attach never gives a whole VF that another guest names or holds, and says so when none is left" {
        whole_setup
        guest web2 "<hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0x0000' bus='0xc2' slot='0x00' function='0x4'/></source></hostdev>"
        guest web1
        run aprepare g3 "pci=$XVF1,type=intel-xe-8192"
        [ "$status" -eq 0 ]
        vs define "$BATS_TEST_TMPDIR/web2.xml" \; define "$BATS_TEST_TMPDIR/web1.xml" \; \
                mdev-hooks attach web1 amd-mxgpu-2 \; mdev-hooks attach web1 intel-xe-8192 \; \
                mdev-hooks attach web1 amd-mxgpu-2 \; dumpxml web1 --inactive
        [[ "$output" == *"added VF $AVF2 (amd-mxgpu-2) to 'web1'"* ]]
        [[ "$output" == *"added VF $XVF2 (intel-xe-8192) to 'web1'"* ]]
        [ "$(grep -c '^mdev-hooks: web1: no free VF of type amd-mxgpu-2' <<< "$output")" -eq 1 ]
        after="$(xml_after)"
        [ "$(grep -c '<mh:vgpu pci=' <<< "$after")" -eq 2 ]
        [[ "$after" != *"pci=\"$AVF1\""* ]]
        [[ "$after" != *"pci=\"$XVF1\""* ]]
}

@test "attach --count and --parent give distinct whole VFs of that GPU or that VF; detach takes one back" {
        whole_setup
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 intel-xe-8192 --count 2 --parent 0000:03:00.0 \; \
                mdev-hooks detach web1 "$XVF1" \; mdev-hooks attach web1 amd-mxgpu-2 --parent "$AVF2" \; \
                mdev-hooks attach web1 amd-mxgpu-2 --parent 0000:03:00.0 \; dumpxml web1 --inactive
        [[ "$output" == *"added VF $XVF1 (intel-xe-8192) to 'web1'"* ]]
        [[ "$output" == *"added VF $XVF2 (intel-xe-8192) to 'web1'"* ]]
        [[ "$output" == *"removed VF $XVF1 (intel-xe-8192) from 'web1': its definition"* ]]
        [[ "$output" == *"added VF $AVF2 (amd-mxgpu-2) to 'web1'"* ]]
        [ "$(grep -c '^mdev-hooks: web1: --parent 0000:03:00.0 is neither a GPU (PF) nor a VF of the' <<< "$output")" -eq 1 ]
        after="$(xml_after)"
        [[ "$after" != *"$XVF1"* ]]
        [[ "$after" == *"pci=\"$XVF2\""* ]]
        [[ "$after" == *"pci=\"$AVF2\""* ]]
        [[ "$after" != *"pci=\"$AVF1\""* ]]
}

@test "attach --live claims a whole VF as prepare does and plugs it in as a managed hostdev" {
        whole_setup
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; start web1 \; mdev-hooks attach web1 intel-xe-8192 --live \; \
                dumpxml web1
        if [[ "$output" == *"hot-plug VF"*"not supported by the connection driver"* ]]; then
                [ -z "$(records)" ] # the claim was undone all the same
                skip "libvirt's test driver here has no hot-plug (libvirt 11's has it for PCI hostdevs)"
        fi
        [[ "$output" == *"added VF $XVF1 (intel-xe-8192) to 'web1': the running guest"* ]]
        [ "$(record_get "$XVF1" guest)" = web1 ]
        [ "$(record_get "$XVF1" state)" = assigned ]
        live="$(xml_after)"
        [[ "$live" == *"<hostdev mode='subsystem' type='pci' managed='yes'>"* ]]
        [[ "$live" == *"<address domain='0x0000' bus='0x03' slot='0x00' function='0x4'/>"* ]]
}

@test "detach takes a VF vGPU by its PCI address and refuses an ordinary passthrough device" {
        vfio_setup
        guest web1 "<hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0x0000' bus='0x03' slot='0x00' function='0x0'/></source></hostdev>"
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; mdev-hooks attach web1 "nvidia-$Q4" \; \
                mdev-hooks detach web1 0000:03:00.0 \; mdev-hooks detach web1 "$VF1" \; dumpxml web1 --inactive
        [ "$(grep -c '^mdev-hooks: web1: PCI hostdev 0000:03:00.0 of the guest is not a vGPU' <<< "$output")" -eq 1 ]
        [[ "$output" == *"removed vGPU $VF1 (nvidia-$Q4) from 'web1': its definition"* ]]
        after="$(xml_after)"
        [[ "$after" != *"$VF1"* ]]
        [[ "$after" != *"mh:mdevs"* ]]
        [[ "$after" == *"bus='0x03'"* ]]
}

@test "attach --live programs a VF as prepare does and plugs it in; a refused unplug changes nothing" {
        vfio_setup
        guest web1
        vs define "$BATS_TEST_TMPDIR/web1.xml" \; start web1 \; mdev-hooks attach web1 "nvidia-$Q4" --live \; \
                dumpxml web1 \; metadata web1 "$NS" --live \; mdev-hooks detach web1 "$VF1" --live
        if [[ "$output" == *"hot-plug vGPU"*"not supported by the connection driver"* ]]; then
                # the claim was undone all the same
                [ "$(sim_vf_type "$VF1")" = 0 ]
                [ -z "$(records)" ]
                skip "libvirt's test driver here has no hot-plug (libvirt 11's has it for PCI hostdevs)"
        fi
        [[ "$output" == *"added vGPU $VF1 (nvidia-$Q4) to 'web1': the running guest"* ]]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" guest)" = web1 ]
        [ "$(record_get "$VF1" state)" = assigned ]
        [ "$(record_get "$VF1" origin)" = created ]
        live="$(xml_after)"
        [[ "$live" == *"<address domain='0x0000' bus='0x41' slot='0x00' function='0x4'/>"* ]]
        [[ "$output" == *"<vgpu pci=\"$VF1\" type=\"nvidia-$Q4\"/>"* ]]
        # the test driver cannot unplug: refused, in one line, nothing changed
        [ "$(grep -c "^mdev-hooks: web1: libvirt refused to unplug vGPU $VF1: .*; nothing was changed$" <<< "$output")" -eq 1 ]
        [ "$(sim_vf_type "$VF1")" = "$Q4" ]
        [ "$(record_get "$VF1" state)" = assigned ]
}
