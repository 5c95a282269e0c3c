#!/usr/bin/env bats
# The qemu hook's "prepare begin" on the simulator, run as libvirt runs it:
# type resolution, placement, capacity, all or nothing, ownership.

load hook-helpers

setup() {
        hook_setup nvidia-timesliced
}

@test "prepare creates the default type's mdev with the UUID from the XML" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35
	EOF
        run prepare web1 "$U1"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        mdev_exists "$U1"
        [ "$(mdev_type "$U1")" = nvidia-35 ]
        [ "$(record_get "$U1" guest)" = web1 ]
        [ "$(record_get "$U1" state)" = assigned ]
        [ "$(record_get "$U1" origin)" = created ]
        [ "$(record_get "$U1" boot_id)" = "$(cat "$MDEV_HOOKS_ROOT/proc/sys/kernel/random/boot_id")" ]
}

@test "prepare's record is on disk before it takes its name, named before the mdev is made, and its directory synced before the hook returns" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35
	EOF
        domxml web1 "$U1" > "$BATS_TEST_TMPDIR/web1.xml"
        local trace="$BATS_TEST_TMPDIR/sync" dir="$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" data name create dirsync round
        # a new file, then the spare the release left
        for round in new spare; do
                # (LeakSanitizer cannot run under ptrace; the other tests run
                # this path untraced)
                run env ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -qq -y -o "$trace" \
                        -e trace=write,fsync,fdatasync,rename,renameat,renameat2 "$MH_QEMU_HOOK" web1 prepare begin - < "$BATS_TEST_TMPDIR/web1.xml"
                [ "$status" -eq 0 ]
                mdev_exists "$U1"
                cat "$trace"
                if [ "$round" = spare ]; then
                        grep -qE "^[0-9]+ +renameat2\(.*\"\.spare\", .*\"\.$U1\.[0-9]+\.tmp\", RENAME_NOREPLACE\) = 0" "$trace"
                fi
                # line numbers in the trace, each call made once: the record's
                # text synced (fsync or fdatasync) in its temporary file, the
                # rename to its UUID, the write of the UUID to create, the
                # directory's fsync
                data=$(grep -nE "^[0-9]+ +f(data)?sync\([0-9]+<$dir/\.$U1\.[0-9]+\.tmp>\) += 0" "$trace" | cut -d: -f1)
                name=$(grep -nE "^[0-9]+ +rename(at2?)?\(.*\.$U1\.[0-9]+\.tmp\".*\"$U1\".* = 0" "$trace" | cut -d: -f1)
                create=$(grep -nE "^[0-9]+ +write\([0-9]+<[^>]*/create>, \"${U1:0:32}" "$trace" | cut -d: -f1)
                dirsync=$(grep -nE "^[0-9]+ +fsync\([0-9]+<$dir>\) += 0" "$trace" | cut -d: -f1)
                echo "$round: data=$data name=$name create=$create dirsync=$dirsync"
                [ "$(wc -w <<< "$data $name $create $dirsync")" -eq 4 ]
                [ "$data" -lt "$name" ]
                [ "$name" -lt "$create" ]
                [ "$name" -lt "$dirsync" ]
                # nothing of the record written after its text was synced
                ! awk -v n="$data" 'NR > n' "$trace" | grep -qE "^[0-9]+ +write\([0-9]+<$dir/" || false
                run -0 release web1
        done
}

@test "two types with device_addresses each go to their own parents" {
        two_types_conf
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-36"
        [ "$status" -eq 0 ]
        [ "$(mdev_type "$U1")" = nvidia-35 ]
        [[ "$(mdev_parent "$U1")" == "$P84" || "$(mdev_parent "$U1")" == "$P85" ]]
        [ "$(mdev_type "$U2")" = nvidia-36 ]
        [ "$(mdev_parent "$U2")" = "$P86" ]
        assert_record_matches_sysfs
}

@test "metadata class picks an enabled type of that mdev_class" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35, nvidia-36

	[mdev_nvidia-35]
	device_addresses = $P84

	[mdev_nvidia-36]
	device_addresses = $P86
	mdev_class = CUSTOM_NVIDIA_36
	EOF
        run prepare web1 "$U1,class=CUSTOM_NVIDIA_36"
        [ "$status" -eq 0 ]
        [ "$(mdev_type "$U1")" = nvidia-36 ]
        [ "$(mdev_parent "$U1")" = "$P86" ]
}

@test "a metadata class that no enabled type has is refused" {
        two_types_conf
        run prepare web1 "$U1,class=CUSTOM_NOPE"
        [ "$status" -eq 1 ]
        [[ "$output" == "mdev-hooks: web1: "*"CUSTOM_NOPE"* ]]
        [ -z "$(sim_mdevs)" ]
}

@test "metadata parent pins the parent" {
        two_types_conf
        run prepare web1 "$U1,type=nvidia-35,parent=$P85"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$P85" ]
}

@test "a pinned parent that serves another type is refused" {
        two_types_conf
        run prepare web1 "$U1,type=nvidia-35,parent=$P86"
        [ "$status" -eq 1 ]
        [[ "$output" == *"$P86 is configured for nvidia-36"* ]]
        [ -z "$(sim_mdevs)" ]
}

@test "without metadata and without a default type prepare says which entry to add" {
        two_types_conf
        run prepare web1 "$U1"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"<mh:mdev uuid=\"$U1\" type=\"...\"/>"* ]]
        [ -z "$(sim_mdevs)" ]
}

@test "the existing mdev's type is used when the metadata has none" {
        two_types_conf
        sim_create "$P86" nvidia-36 "$U1"
        run prepare web1 "$U1"
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" type)" = nvidia-36 ]
}

@test "an existing mdev of another type than the metadata asks is refused" {
        two_types_conf
        sim_create "$P86" nvidia-36 "$U1"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 1 ]
        [[ "$output" == *"exists with type nvidia-36"* ]]
        [ -z "$(records)" ]
}

@test "max_instances caps the type across the host" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-44

	[mdev_nvidia-44]
	max_instances = 2
	EOF
        # One made by hand counts too (each M60 holds one nvidia-44).
        sim_create "$P87" nvidia-44 "$U4"
        run prepare web1 "$U1,type=nvidia-44"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$P84" ]
        run prepare web2 "$U2,type=nvidia-44"
        [ "$status" -eq 1 ]
        [[ "$output" == *"max_instances"* ]]
        mdev_absent "$U2"
        [ "$(sim_mdevs | wc -l)" -eq 2 ]
}

@test "a parent whose available_instances would pass max_instances gets none, as in Nova's inventory" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	device_addresses = $P84, $P85
	max_instances = 2
	EOF
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 1 ]
        [ "$output" = "mdev-hooks: web1: no capacity for nvidia-35: $P84 is over max_instances for nvidia-35, $P85 is over max_instances for nvidia-35, $P86 is not configured for any type, $P87 is not configured for any type" ]
        mdev_absent "$U1"
}

@test "pack puts a new mdev on the parent that already holds most of its type" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	device_addresses = $P84, $P85

	[hooks]
	placement = pack
	EOF
        sim_create "$P85" nvidia-35 "$U4"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$P85" ]
        run prepare web2 "$U2,type=nvidia-35"
        [ "$(mdev_parent "$U2")" = "$P85" ]
}

@test "spread puts a new mdev on the parent that holds fewest of its type" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	device_addresses = $P84, $P85

	[hooks]
	placement = spread
	EOF
        sim_create "$P84" nvidia-35 "$U4"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$P85" ]
        run prepare web2 "$U2,type=nvidia-35"
        [ "$status" -eq 0 ]
        # Now one each: the tie goes to the lower address.
        [ "$(mdev_parent "$U2")" = "$P84" ]
}

@test "no capacity: one line lists every candidate and why, and nothing is created" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-44, nvidia-36

	[mdev_nvidia-44]
	device_addresses = $P84, $P86

	[mdev_nvidia-36]
	device_addresses = $P85
	EOF
        sim_unregister "$P86"
        run prepare web1 "$U1,type=nvidia-44"
        [ "$status" -eq 0 ]
        run prepare web2 "$U2,type=nvidia-44"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: web2: no capacity for nvidia-44: "* ]]
        [[ "$output" == *"$P84 has 0 of 1 left"* ]]
        [[ "$output" == *"$P86 is not registered"* ]]
        [[ "$output" == *"$P85 is configured for nvidia-36"* ]]
        [[ "$output" == *"$P87 is not configured for any type"* ]]
        mdev_absent "$U2"
        [ "$(records)" = "$U1" ]
}

@test "a create refused by one parent moves on to the next" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	device_addresses = $P84, $P85
	EOF
        sim_create_fail EINVAL "$P84"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$P85" ]
        [ "$(record_get "$U1" parent)" = "$P85" ]
}

@test "a guest with two mdevs whose second fails leaves nothing behind" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35, nvidia-44

	[mdev_nvidia-35]
	device_addresses = $P84

	[mdev_nvidia-44]
	device_addresses = $P85
	EOF
        sim_create "$P85" nvidia-44 "$U4"
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-44"
        [ "$status" -eq 1 ]
        [[ "$output" == *"no capacity for nvidia-44"* ]]
        mdev_absent "$U1"
        mdev_absent "$U2"
        [ "$(sim_mdevs)" = "$U4" ]
        [ -z "$(records)" ]
}

@test "a UUID held by another guest is refused and names that guest" {
        two_types_conf
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        run prepare web2 "$U1,type=nvidia-35"
        [ "$status" -eq 1 ]
        [[ "$output" == "mdev-hooks: web2: "*"held by guest 'web1'"* ]]
        [ "$(record_get "$U1" guest)" = web1 ]
}

@test "release after a refused prepare removes nothing of the other guest" {
        two_types_conf
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        run prepare web2 "$U2,type=nvidia-35" "$U1,type=nvidia-35"
        [ "$status" -eq 1 ]
        run release web2 failed
        [ "$status" -eq 0 ]
        run release web2 -
        [ "$status" -eq 0 ]
        mdev_exists "$U1"
        [ "$(record_get "$U1" guest)" = web1 ]
        [ "$(record_get "$U1" state)" = assigned ]
        mdev_absent "$U2"
}

@test "a restart of the same guest reuses its mdev" {
        two_types_conf
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        parent="$(mdev_parent "$U1")"
        sim_counters_reset
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$parent" ]
        [ "$(record_get "$U1" origin)" = created ]
        # Reused: nothing was written to sysfs.
        [ "$(sim_counter_total writes)" -eq 0 ]
}

@test "a guest with four mdevs reads each candidate's available_instances once, even where it created" {
        [[ " ${SIM_FLAGS:-} " != *" -c "* ]] || skip "the counters do not see what the kernel serves from its cache (-c)"
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35
	EOF
        sim_counters_reset
        run prepare web1 "$U1,type=nvidia-35" "$U2,type=nvidia-35" "$U3,type=nvidia-35" "$U4,type=nvidia-35"
        [ "$status" -eq 0 ]
        # pack: all four on the first parent, the other three read once.
        for u in "$U1" "$U2" "$U3" "$U4"; do [ "$(mdev_parent "$u")" = "$P84" ]; done
        local opens
        opens=$(sim_counters | awk '$NF ~ /nvidia-35\/available_instances$/ { print $NF, $1 }')
        echo "$opens"
        [ "$(grep -c . <<< "$opens")" -eq 4 ]
        # the four are planned from one reading and made together
        # (alloc_run_plans()): the parent created on is not read again
        [ "$(awk '$2 != 1' <<< "$opens" | wc -l)" -eq 0 ]
}

# available_reads TYPE: "PATH READS" of every TYPE/available_instances read.
# Reads, not opens: a prepare that waits for the lock opens its candidates'
# files meanwhile (alloc_preopen()) and reads under it only those it needs.
available_reads() {
        sim_counters | awk -v t="$1" '$NF ~ "/" t "/available_instances$" && $2 > 0 { print $NF, $2 }'
}

@test "pack stops reading the candidates at the first parent with room and 1 left: none after it can be chosen" {
        [[ " ${SIM_FLAGS:-} " != *" -c "* ]] || skip "the counters do not see what the kernel serves from its cache (-c)"
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-45
	EOF
        # nvidia-45: one per GPU. P84 is full (an mdev made by hand); P85,
        # P86 and P87 have 1 left each, and P85 wins the tie by name.
        sim_create "$P84" nvidia-45 aaaaaaaa-0000-4000-8000-000000000001
        sim_counters_reset
        run prepare web1 "$U1,type=nvidia-45"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$P85" ]
        local reads
        reads=$(available_reads nvidia-45)
        echo "$reads"
        # P84 and P85 read once each; P86 and P87 not at all
        [ "$(grep -c . <<< "$reads")" -eq 2 ]
        grep -q "/$P84/mdev_supported_types/nvidia-45/available_instances 1$" <<< "$reads"
        grep -q "/$P85/mdev_supported_types/nvidia-45/available_instances 1$" <<< "$reads"
}

@test "spread, and pack under max_instances, still read every candidate and choose as pack does above" {
        [[ " ${SIM_FLAGS:-} " != *" -c "* ]] || skip "the counters do not see what the kernel serves from its cache (-c)"
        local conf reads
        sim_create "$P84" nvidia-45 aaaaaaaa-0000-4000-8000-000000000001
        for conf in "[hooks]
placement = spread" "[mdev_nvidia-45]
max_instances = 8
[hooks]
placement = pack"; do
                config_write "[devices]
enabled_mdev_types = nvidia-45
$conf"
                sim_counters_reset
                run prepare web1 "$U1,type=nvidia-45"
                [ "$status" -eq 0 ]
                [ "$(mdev_parent "$U1")" = "$P85" ]
                reads=$(available_reads nvidia-45)
                echo "$conf: $reads"
                [ "$(grep -c . <<< "$reads")" -eq 4 ]
                run release web1
                [ "$status" -eq 0 ]
                mdev_absent "$U1"
        done
}

# big_prepare_reads_once AWK: the guest "big" with two nvidia-35 mdevs,
# grown past 512 KiB by what AWK
# adds, prepared by the hook run under what the array HOOK_RUN holds (a
# tracer, or env): placed as the small XML above (pack: both on the first
# parent), then released; $opens: its reads of the candidates.
big_prepare_reads_once() {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35
	EOF
        domxml big "$U1,type=nvidia-35" "$U2,type=nvidia-35" | awk "$1" > "$BATS_TEST_TMPDIR/big.xml"
        [ "$(stat -c %s "$BATS_TEST_TMPDIR/big.xml")" -ge 524288 ]
        sim_counters_reset
        run "${HOOK_RUN[@]}" "$MH_QEMU_HOOK" big prepare begin - < "$BATS_TEST_TMPDIR/big.xml"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$P84" ]
        [ "$(mdev_parent "$U2")" = "$P84" ]
        [ "$(record_get "$U1" guest)" = big ]
        [ "$(record_get "$U2" guest)" = big ]
        opens=$(sim_counters | awk '$NF ~ /nvidia-35\/available_instances$/ { print $NF, $1 }')
        echo "$opens"
        run hook big release end - < "$BATS_TEST_TMPDIR/big.xml"
        [ "$status" -eq 0 ]
        mdev_absent "$U1"
        mdev_absent "$U2"
}

# big_reads_once: each candidate was read once by big_prepare_reads_once
# (its opens), which the counters see only without -c.
big_reads_once() {
        [[ " ${SIM_FLAGS:-} " != *" -c "* ]] || skip "the counters do not see what the kernel serves from its cache (-c); the rest passed"
        [ "$(grep -c . <<< "$opens")" -eq 4 ]
        [ "$(awk '$2 != 1' <<< "$opens" | wc -l)" -eq 0 ]
}

@test "a prepare of an XML of 512 KiB or more reads each candidate once and places as a small one does" {
        # Grown as a real XML grows, by its disks.
        HOOK_RUN=(env)
        big_prepare_reads_once '{ print } /<devices>/ { for (i = 0; i < 4000; i++)
                printf "    <disk type=\"file\" device=\"disk\"><driver name=\"qemu\" type=\"qcow2\"/><source file=\"/var/lib/libvirt/images/d%d.qcow2\"/><target dev=\"vd%d\" bus=\"virtio\"/></disk>\n", i, i }'
        big_reads_once
}

@test "a large prepare with a comment sets up once and reads each candidate once" {
        # A comment, which libxml2 reads as any other node.
        local trace="$BATS_TEST_TMPDIR/openat"
        # (LeakSanitizer cannot run under ptrace: the other large-XML tests
        # check this path for leaks untraced)
        HOOK_RUN=(env ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -qq -e trace=openat -o "$trace")
        big_prepare_reads_once '{ print } /<memory / { printf "  <!--"; for (i = 0; i < 60000; i++) printf " padding."; print " -->" }'
        grep -q 'mdev-hooks-qemu-worker\.so", ' "$trace"
        # set up once: the config read once and the lock taken once
        [ "$(grep -cE '"etc/mdev-hooks/mdev-hooks.conf", .* = [0-9]+$' "$trace")" -eq 1 ]
        [ "$(grep -cE '"run/mdev-hooks/lock", .* = [0-9]+$' "$trace")" -eq 1 ]
        big_reads_once
}

# pack_spread_as_full_read PACK OTHER: on the simulator's host of the
# parents listed in parents[] (by name), with nvidia-100 (16 per GPU) only:
# 3 mdevs on parents[PACK], 1 on parents[OTHER] and 1 on parents[0]. Pack
# chooses parents[PACK] (13 left, the fewest with room), spread parents[1]
# (the first by name of the untouched ones), as a full read would, each
# candidate read once (counted without -c).
pack_spread_as_full_read() {
        local pack=$1 other=$2 conf reads
        sim_create "${parents[$pack]}" nvidia-100 aaaaaaaa-0000-4000-8000-000000000001
        sim_create "${parents[$pack]}" nvidia-100 aaaaaaaa-0000-4000-8000-000000000002
        sim_create "${parents[$pack]}" nvidia-100 aaaaaaaa-0000-4000-8000-000000000003
        sim_create "${parents[$other]}" nvidia-100 aaaaaaaa-0000-4000-8000-000000000004
        sim_create "${parents[0]}" nvidia-100 aaaaaaaa-0000-4000-8000-000000000005
        for conf in "pack ${parents[$pack]}" "spread ${parents[1]}"; do
                config_write "[devices]
enabled_mdev_types = nvidia-100
[hooks]
placement = ${conf% *}"
                sim_counters_reset
                run prepare web1 "$U1,type=nvidia-100"
                [ "$status" -eq 0 ]
                [ "$(mdev_parent "$U1")" = "${conf#* }" ]
                if [[ " ${SIM_FLAGS:-} " != *" -c "* ]]; then
                        reads=$(available_reads nvidia-100)
                        [ "$(grep -c . <<< "$reads")" -eq "${#parents[@]}" ]
                        [ "$(awk '$2 != 1' <<< "$reads" | wc -l)" -eq 0 ]
                fi
                run release web1
                [ "$status" -eq 0 ]
                mdev_absent "$U1"
        done
}

@test "256 candidates, read on two threads: pack and spread choose as a full read would, each candidate read once" {
        sim_umount
        sim_mount large
        local parents
        mapfile -t parents < <(ls "$SIM_SYS/class/mdev_bus" | sort)
        [ "${#parents[@]}" -eq 256 ]
        # nvidia-100: 16 per GPU. The second thread reads the second half:
        # pack's choice is there.
        pack_spread_as_full_read 200 10
}

@test "80 candidates behind four bridges, read from the directories that hold them: pack and spread choose as a full read would" {
        # GPUs behind four switches, as on a large host: bus 0x1B of 20
        # parents behind bridge 0000:00:0B.0, for B in 1..4. The two threads
        # that read them start in different directories.
        local topo="$BATS_TEST_TMPDIR/bridges.conf" b dd name parents=()
        {
                echo "types g"
                echo "type nvidia-100 instances=16"
                echo "end"
                for ((b = 1; b <= 4; b++)); do
                        for ((dd = 0; dd < 20; dd++)); do
                                name=$(printf '0000:%02x:%02x.0' $((0x10 + b)) "$dd")
                                printf 'parent %s types=g onetype=1 errno=EINVAL devpath=pci0000:00/0000:00:%02x.0/%s\n' \
                                        "$name" "$b" "$name"
                        done
                done
        } > "$topo"
        sim_umount
        sim_mount "$topo"
        mapfile -t parents < <(ls "$SIM_SYS/class/mdev_bus" | sort)
        [ "${#parents[@]}" -eq 80 ]
        [ "$(readlink "$SIM_SYS/class/mdev_bus/${parents[25]}")" = "../../devices/pci0000:00/0000:00:02.0/${parents[25]}" ]
        pack_spread_as_full_read 61 7
        # A parent that goes (unregistered) is one that a read finds gone:
        # not chosen, and the others still read from their directories.
        sim_ctl unregister "${parents[61]}"
        config_write "[devices]
enabled_mdev_types = nvidia-100"
        run prepare web1 "$U1,type=nvidia-100"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "${parents[0]}" ]
        run release web1
        [ "$status" -eq 0 ]
        # Each bridge's directory is opened once, learnt from a link; a
        # link is read at most once per directory and thread (two here).
        # (-ff: a file per thread, so that no call is split in two lines)
        local trace="$BATS_TEST_TMPDIR/trace" calls
        run env ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -ff -qq -e trace=openat,readlinkat -o "$trace" \
                "$MH_QEMU_HOOK" web1 prepare begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 0 ]
        calls=$(cat "$trace".*)
        [ "$(grep -cE '"\.\./\.\./devices/pci0000:00/0000:00:0[1-4]\.0", O_RDONLY\|O_CLOEXEC\|O_PATH\|O_DIRECTORY\) = [0-9]+$' <<< "$calls")" -eq 4 ]
        [ "$(grep -cE 'readlinkat\([0-9]+, "0000:1[1-4]:[0-9a-f]{2}\.0", "\.\./\.\./devices/' <<< "$calls")" -le 8 ]
        [ "$(grep -cE '/available_instances", .* = [0-9]+$' <<< "$calls")" -eq 79 ]
}

@test "a no-capacity message on a host of 256 GPUs stays one line and says how many parents it left out" {
        sim_umount
        sim_mount large
        local first
        first=$(ls "$SIM_SYS/class/mdev_bus" | sort | head -1)
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-104

	[mdev_nvidia-104]
	device_addresses = $first
	max_instances = 1
	EOF
        run prepare web1 "$U1,type=nvidia-104"
        [ "$status" -eq 0 ]
        run prepare web2 "$U2,type=nvidia-104"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: web2: no capacity for nvidia-104: $first "* ]]
        [[ "$output" =~ ,\ and\ [0-9]+\ more\ \(see\ mdev-hooks\ inventory\)$ ]]
        mdev_absent "$U2"
}

@test "a record of an earlier boot does not hold the UUID" {
        two_types_conf
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        sim_remove "$U1"
        sim_new_boot
        run prepare web2 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" guest)" = web2 ]
}

@test "a borrowed mdev is recorded as borrowed" {
        two_types_conf
        sim_create "$P84" nvidia-35 "$U1"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        [ "$(record_get "$U1" origin)" = borrowed ]
}

@test "a parent that registers during parent_wait is used" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	device_addresses = $P84

	[hooks]
	parent_wait = 10
	EOF
        sim_unregister "$P84"
        sim_register "$P84" 700
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$P84" ]
}

@test "a guest waiting for its parent (parent_wait) does not hold other guests' starts" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35, nvidia-36

	[mdev_nvidia-35]
	device_addresses = $P84

	[mdev_nvidia-36]
	device_addresses = $P85

	[hooks]
	parent_wait = 60
	lock_timeout = 1
	EOF
        sim_unregister "$P84"
        domxml web1 "$U1,type=nvidia-35" > "$BATS_TEST_TMPDIR/web1.xml"
        hook web1 prepare begin - < "$BATS_TEST_TMPDIR/web1.xml" > "$BATS_TEST_TMPDIR/web1.out" 2>&1 3>&- &
        local waiter=$!
        # web1 is waiting once it has taken the lock (its line) and let it go.
        local lock="$MDEV_HOOKS_ROOT/run/mdev-hooks/lock" i
        for i in $(seq 200); do
                grep -qs "prepare web1" "$lock" && flock -n "$lock" true && break
                sleep 0.05
        done
        # web1 waits for 0000:84:00.0 far longer than lock_timeout; web2's
        # parent is there, so web2 must start instead of timing out.
        run prepare web2 "$U2,type=nvidia-36"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U2")" = "$P85" ]
        [ "$(record_get "$U2" guest)" = web2 ]
        sim_register "$P84"
        wait "$waiter"
        [ "$(mdev_parent "$U1")" = "$P84" ]
        [ "$(record_get "$U1" guest)" = web1 ]
}

@test "a virtual parent (mtty) that registers during parent_wait is used" {
        sim_umount
        sim_mount mtty
        config_write <<-EOF
	[devices]
	enabled_mdev_types = mtty-1

	[mdev_mtty-1]
	device_addresses = mtty

	[hooks]
	parent_wait = 30
	EOF
        sim_unregister mtty
        [ ! -e "$SIM_SYS/devices/virtual/mtty/mtty" ]
        sim_register mtty 700
        run prepare web1 "$U1,type=mtty-1"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = mtty ]
}

@test "a PCI parent with no device behind it is not waited for" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	device_addresses = 0000:99:00.0

	[hooks]
	parent_wait = 600
	EOF
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 1 ]
        [[ "$output" == *"0000:99:00.0 is not registered"* ]]
        [ -z "$(records)" ]
}

@test "a parent that does not register within parent_wait is reported" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	device_addresses = $P84

	[hooks]
	parent_wait = 1
	EOF
        sim_unregister "$P84"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 1 ]
        [[ "$output" == *"$P84 is not registered"* ]]
        [ -z "$(records)" ]
}

@test "a guest without mdevs takes no lock and reads no config" {
        printf '[devices]\nbogus line\n' | config_write
        domxml plain > "$BATS_TEST_TMPDIR/plain.xml"
        for op in "prepare begin -" "release end -" "migrate begin -" "restore begin -" "reconnect begin -"; do
                run -0 hook plain $op < "$BATS_TEST_TMPDIR/plain.xml"
                [ -z "$output" ]
        done
        [ ! -e "$MDEV_HOOKS_ROOT/run/mdev-hooks/lock" ]
        [ ! -e "$MDEV_HOOKS_ROOT/var/lib/mdev-hooks" ]
}

@test "start, started, stopped, attach and unknown operations exit 0 at once" {
        printf '[devices]\nbogus line\n' | config_write
        domxml web1 "$U1" > "$BATS_TEST_TMPDIR/web1.xml"
        for op in "start begin -" "started begin -" "stopped end -" "attach begin -" "frobnicate begin -"; do
                run -0 hook web1 $op < "$BATS_TEST_TMPDIR/web1.xml"
                [ -z "$output" ]
        done
        [ ! -e "$MDEV_HOOKS_ROOT/run/mdev-hooks/lock" ]
        [ -z "$(sim_mdevs)" ]
}

@test "a config with errors refuses prepare with its first error and writes nothing" {
        printf '[devices]\nenabled_mdev_types = nvidia-35\n[mdev_nvidia-35]\nmax_instances = 0\n' | config_write
        sim_counters_reset
        run prepare web1 "$U1"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: web1: "*"mdev-hooks.conf:4"* ]]
        [ "$(sim_counter_total writes)" -eq 0 ]
}

@test "the lock times out naming the holder and lock_timeout" {
        printf '[devices]\nenabled_mdev_types = nvidia-35\n[hooks]\nlock_timeout = 1\n' | config_write
        lock_hold "$MDEV_HOOKS_ROOT/run/mdev-hooks/lock" "prepare other"
        run prepare web1 "$U1"
        lock_let_go
        [ "$status" -eq 1 ]
        [[ "$output" == *"prepare other"* ]]
        [[ "$output" == *"lock_timeout"* ]]
        mdev_absent "$U1"
}

@test "the lock file's first line names the last holder, even after a longer one" {
        printf '[devices]\nenabled_mdev_types = nvidia-35\n' | config_write
        long=guest-with-a-rather-long-name-for-the-lock-file
        run prepare "$long" "$U1"
        [ "$status" -eq 0 ]
        run prepare web2 "$U2"
        [ "$status" -eq 0 ]
        run head -n 1 "$MDEV_HOOKS_ROOT/run/mdev-hooks/lock"
        [[ "$output" =~ ^[0-9]+\ prepare\ web2$ ]]
}

@test "prepare waits for the lock and goes on when it frees" {
        printf '[devices]\nenabled_mdev_types = nvidia-35\n[hooks]\nlock_timeout = 20\n' | config_write
        lock="$MDEV_HOOKS_ROOT/run/mdev-hooks/lock"
        lock_hold "$lock" "prepare other"
        domxml web1 "$U1" > "$BATS_TEST_TMPDIR/web1.xml"
        hook web1 prepare begin - < "$BATS_TEST_TMPDIR/web1.xml" > "$BATS_TEST_TMPDIR/web1.out" 2>&1 3>&- &
        local waiter=$! rc=0
        # It waits for the lock and has done nothing yet.
        lock_waiter "$lock"
        mdev_absent "$U1"
        lock_let_go
        wait "$waiter" || rc=$?
        cat "$BATS_TEST_TMPDIR/web1.out"
        [ "$rc" -eq 0 ]
        mdev_exists "$U1"
        [ "$(record_get "$U1" guest)" = web1 ]
}

@test "a hook whose worker module is missing says so: a prepare fails, a release does not" {
        printf '[devices]\nenabled_mdev_types = nvidia-35\n' | config_write
        mkdir "$BATS_TEST_TMPDIR/bin"
        cp "$MH_QEMU_HOOK" "$BATS_TEST_TMPDIR/bin/"
        domxml web1 "$U1" > "$BATS_TEST_TMPDIR/web1.xml"
        run "$BATS_TEST_TMPDIR/bin/mdev-hooks-qemu" web1 prepare begin - < "$BATS_TEST_TMPDIR/web1.xml"
        [ "$status" -eq 1 ]
        [[ "$output" == "mdev-hooks: web1: cannot load the hook's worker (is mdev-hooks installed whole?): "*"mdev-hooks-qemu-worker.so"* ]]
        mdev_absent "$U1"
        # a release says so, and lets the guest go
        run -0 prepare web2 "$U2"
        run "$BATS_TEST_TMPDIR/bin/mdev-hooks-qemu" web2 release end - < <(domxml web2 "$U2")
        [ "$status" -eq 0 ]
        [[ "$output" == *"cannot load the hook's worker"* ]]
        mdev_exists "$U2"
        # A guest without mdevs never needs it.
        domxml plain > "$BATS_TEST_TMPDIR/plain.xml"
        run "$BATS_TEST_TMPDIR/bin/mdev-hooks-qemu" plain prepare begin - < "$BATS_TEST_TMPDIR/plain.xml"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
}

@test "the hook's program links neither libxml2 nor libinih: only its worker module does" {
        run ldd "$MH_QEMU_HOOK"
        [ "$status" -eq 0 ]
        [[ "$output" != *libxml2* ]]
        [[ "$output" != *libinih* ]]
        run nm "$MH_QEMU_HOOK"
        [[ "$output" != *ini_parse* ]]
        [[ "$output" != *xmlReadMemory* ]]
        run ldd "$(dirname "$MH_QEMU_HOOK")/mdev-hooks-qemu-worker.so"
        [[ "$output" == *libxml2* ]]
}

# run_traced NAME XMLFILE: "NAME prepare begin -" with the loader's record in
# $BATS_TEST_TMPDIR/ld-NAME.*.
run_traced() {
        run env LD_DEBUG=files LD_DEBUG_OUTPUT="$BATS_TEST_TMPDIR/ld-$1" "$MH_QEMU_HOOK" "$1" prepare begin - < "$2"
}

@test "a prepare of an XML with a comment or another encoding goes through libxml2 and creates the mdev" {
        two_types_conf
        # a comment inside the metadata; a declared encoding other than UTF-8
        domxml web2 "$U2,type=nvidia-36" | sed 's|<metadata>|<metadata><!-- kept by hand -->|' > "$BATS_TEST_TMPDIR/web2.xml"
        { printf "<?xml version='1.0' encoding='ISO-8859-1'?>\n"; domxml web3 "$U3,type=nvidia-36"; } > "$BATS_TEST_TMPDIR/web3.xml"
        for g in web2 web3; do
                run_traced "$g" "$BATS_TEST_TMPDIR/$g.xml"
                [ "$status" -eq 0 ]
                [ -z "$output" ]
                run loaded_by "$BATS_TEST_TMPDIR/ld-$g"
                [[ "$output" == *mdev-hooks-qemu-worker.so* ]]
                [[ "$output" == *libxml2* ]]
        done
        for u in "$U2" "$U3"; do
                [ "$(mdev_type "$u")" = nvidia-36 ]
                [ "$(mdev_parent "$u")" = "$P86" ]
                [ "$(record_get "$u" state)" = assigned ]
        done
        [ "$(record_get "$U2" guest)" = web2 ]
        [ "$(record_get "$U3" guest)" = web3 ]
        # and what libxml2 refuses is still refused with its message
        printf '<domain><name>web4</name><devices><hostdev mode="subsystem" type="mdev"><source><address uuid="%s"/></source></hostdev></devices>' "$U4" > "$BATS_TEST_TMPDIR/web4.xml"
        run "$MH_QEMU_HOOK" web4 prepare begin - < "$BATS_TEST_TMPDIR/web4.xml"
        [ "$status" -eq 1 ]
        [[ "$output" == "mdev-hooks: web4: malformed domain XML at line 1"* ]]
        mdev_absent "$U4"
        assert_record_matches_sysfs
}

# --- one capacity rule: the hook places only where the inventory has room ---

# inventory_free: "PARENT FREE" for every parent of the inventory with free capacity.
inventory_free() {
        "$MH_CLI" inventory --json | jq -r '.parents[] | select(.free > 0) | "\(.parent) \(.free)"'
}

# agree TOPOLOGY PLACEMENT: under a max_instances that caps some parents
# (and an mdev made by hand on the last parent, which counts first), starts
# guests one by one until the hook refuses. Before each start the inventory
# is read: the guest must land on a parent the inventory showed free
# capacity on, and the hook must refuse exactly when the inventory shows
# none. At the end, the inventory shows nothing free and the mdevs are
# what its totals say.
agree() {
        local topo="$1" placement="$2" type inst max last i uuid free parent made=0 total
        sim_umount
        sim_mount "$topo"
        type=$(awk '$1 == "type" { print $2; exit }' "$(sim_topology "$topo")")
        last=$(ls "$SIM_SYS/class/mdev_bus" | sort | tail -1)
        inst=1
        [ -z "$last" ] || inst=$(sim_available "$last" "$type")
        max=$((2 * inst + inst / 2 + 1))
        config_write <<-EOF
	[devices]
	enabled_mdev_types = $type

	[mdev_$type]
	max_instances = $max

	[hooks]
	placement = $placement
	EOF
        [ -z "$last" ] || sim_create "$last" "$type" "aaaaaaaa-0000-4000-8000-000000000000"
        for ((i = 1; i <= max + 1; i++)); do
                free=$(inventory_free)
                uuid=$(printf 'b1ae8bf6-38b0-4c81-9d44-%012x' "$i")
                run prepare "g$i" "$uuid,type=$type"
                if [ -z "$free" ]; then
                        echo "$topo $placement: g$i: the inventory has no room: $output"
                        [ "$status" -eq 1 ]
                        [[ "$output" == *"no capacity for $type"* ]]
                        mdev_absent "$uuid"
                        break
                fi
                [ "$status" -eq 0 ] || { echo "$topo $placement: g$i refused while the inventory had room: $free / $output"; return 1; }
                parent=$(mdev_parent "$uuid")
                grep -q "^$parent " <<<"$free" || { echo "$topo $placement: g$i on $parent, where the inventory had no room: $free"; return 1; }
                made=$((made + 1))
        done
        [ -z "$(inventory_free)" ]
        total=$("$MH_CLI" inventory --json | jq '[.parents[] | .total] | add // 0')
        [ "$total" -le "$max" ]
        # every mdev made (and the hand-made one) is counted in a total
        [ "$(sim_mdevs | wc -l)" -le "$total" ] || [ "$(sim_mdevs | wc -l)" -eq 0 ]
        echo "$topo $placement: $made guests started, max_instances $max, totals $total"
}

@test "the hook places only where the inventory has room, with pack and spread, on every simulated topology" {
        local topo
        for topo in "$MH_SOURCE_DIR"/tests/sim/topologies/*.conf; do
                agree "$(basename "$topo" .conf)" pack
                agree "$(basename "$topo" .conf)" spread
        done
}

@test "spread does not pick a parent that max_instances caps, though it has the most room" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	device_addresses = $P84, $P85
	max_instances = 16

	[hooks]
	placement = spread
	EOF
        # 85 holds one: 15 left under the cap; 84's 16 do not fit, 85's 15 do.
        sim_create "$P85" nvidia-35 "$U4"
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = "$P85" ]
}

@test "inventory --placement names the providers of the simulated mtty and SR-IOV VFs as libvirt does" {
        sim_umount
        sim_mount mtty
        printf '[devices]\nenabled_mdev_types = mtty-1\n' | config_write
        run "$MH_CLI" inventory --placement --hostname h
        [ "$status" -eq 0 ]
        [ "$(jq -r '.resource_providers[].name' <<<"$output")" = h_mtty_mtty ]
        sim_umount
        sim_mount nvidia-sriov
        printf '[devices]\nenabled_mdev_types = nvidia-472\n' | config_write
        run "$MH_CLI" inventory --placement --hostname h
        [ "$status" -eq 0 ]
        [ "$(jq -r '.resource_providers[0].name' <<<"$output")" = h_pci_0000_3b_00_4 ]
}

@test "prepare finds a parent named by its libvirt node-device name in device_addresses (mtty_mtty, as in Nova's CI)" {
        sim_umount
        sim_mount mtty
        config_write <<-EOF
	[devices]
	enabled_mdev_types = mtty-1, mtty-2

	[mdev_mtty-2]
	device_addresses = mtty_mtty
	EOF
        run prepare web1 "$U1,type=mtty-2"
        [ "$status" -eq 0 ]
        [ "$(mdev_parent "$U1")" = mtty ]
        [ "$(mdev_type "$U1")" = mtty-2 ]
}

@test "prepare reads a pasted nova.conf: 32 VFs on one device_addresses line and a 255-character mdev_class" {
        sim_umount
        sim_mount nvidia-sriov
        local vfs cls
        vfs=$(ls "$SIM_SYS/class/mdev_bus" | sort | paste -sd, | sed 's/,/, /g')
        [ "${#vfs}" -gt 400 ]
        cls="CUSTOM_$(printf 'A%.0s' $(seq 248))"
        [ "${#cls}" -eq 255 ]
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-472

	[mdev_nvidia-472]
	device_addresses = $vfs
	mdev_class = $cls
	EOF
        run "$MH_CLI" check-config
        [ "$status" -eq 0 ]
        run prepare web1 "$U1,class=$cls"
        [ "$status" -eq 0 ]
        [ "$(mdev_type "$U1")" = nvidia-472 ]
        run "$MH_CLI" inventory --placement --hostname h
        [ "$(jq -r --arg c "$cls" '[.resource_providers[].usages[$c]] | add' <<<"$output")" = 1 ]
}

# --- a pasted nova.conf: what Nova accepts with a warning, and what it refuses ---

@test "two types without device_addresses: the first is the default and the second is not used, with a warning, as in Nova" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35, nvidia-36
	EOF
        run --separate-stderr prepare web1 "$U1"
        [ "$status" -eq 0 ]
        [ "$(mdev_type "$U1")" = nvidia-35 ]
        [[ "$stderr" == *"/etc/mdev-hooks/mdev-hooks.conf:2: 'nvidia-36' and 'nvidia-35' (line 2) both have no device_addresses: as Nova does, 'nvidia-35' is the default for every parent not listed and 'nvidia-36' is not used"* ]]
        run prepare web2 "$U2,type=nvidia-36"
        [ "$status" -eq 1 ]
        [[ "$output" == *"mdev-hooks: web2: type nvidia-36 is not enabled here; enabled: nvidia-35"* ]]
        mdev_absent "$U2"
        # the inventory counts the same way; check-config refuses the file
        run --separate-stderr "$MH_CLI" inventory --json
        [ "$status" -eq 0 ]
        [ "$(jq -r '[.parents[].type] | unique | join(",")' <<<"$output")" = nvidia-35 ]
        [[ "$stderr" == *"'nvidia-36' is not used"* ]]
        run "$MH_CLI" check-config
        [ "$status" -eq 2 ]
        [[ "$output" == *"/etc/mdev-hooks/mdev-hooks.conf:2: 'nvidia-36' and 'nvidia-35' (line 2) both have no device_addresses"* ]]
}

@test "an invalid device address is refused by every program, as Nova refuses to start" {
        config_write <<-EOF
	[devices]
	enabled_mdev_types = nvidia-35

	[mdev_nvidia-35]
	device_addresses = 0000:84:00
	EOF
        run prepare web1 "$U1,type=nvidia-35"
        [ "$status" -eq 1 ]
        [ "$output" = "mdev-hooks: web1: the config has errors, fix it first (mdev-hooks check-config): /etc/mdev-hooks/mdev-hooks.conf:5: '0000:84:00' is not a PCI address of the form 0000:84:00.0" ]
        mdev_absent "$U1"
        run "$MH_CLI" inventory
        [ "$status" -eq 2 ]
        run "$MH_CLI" check-config
        [ "$status" -eq 2 ]
}
