#!/usr/bin/env bats
# Bad input to the qemu hook: a clear one-line error, exit 1 for prepare, and
# no write to sysfs and no record.

load hook-helpers

setup() {
        hook_setup nvidia-timesliced
        printf '[devices]\nenabled_mdev_types = nvidia-35\n' | config_write
        sim_counters_reset
}

# refused XML: runs prepare with XML on stdin and checks the refusal.
refused() {
        run hook evil prepare begin - < "$BATS_TEST_TMPDIR/in.xml"
        echo "$output"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: evil: "* ]]
        [ "$(sim_counter_total writes)" -eq 0 ]
        [ -z "$(sim_mdevs)" ]
        [ -z "$(records)" ]
}

@test "malformed XML is refused without a sysfs write" {
        domxml evil "$U1" | head -n -3 > "$BATS_TEST_TMPDIR/in.xml"
        refused
}

@test "XML over the size limit is refused without a sysfs write" {
        { domxml evil "$U1" | head -n -1; head -c 9000000 /dev/zero | tr '\0' ' '; echo '</domain>'; } > "$BATS_TEST_TMPDIR/in.xml"
        refused
        [[ "$output" == *"MiB"* ]]
}

@test "entity expansion is refused without a sysfs write" {
        {
                echo '<?xml version="1.0"?>'
                echo '<!DOCTYPE domain [ <!ENTITY a "aaaaaaaaaa"> <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"> <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"> ]>'
                domxml evil "$U1" | sed "s|<name>evil</name>|<name>evil</name><description>\&c;</description>|"
        } > "$BATS_TEST_TMPDIR/in.xml"
        refused
}

@test "an external entity is refused without a sysfs write" {
        {
                echo '<?xml version="1.0"?>'
                echo '<!DOCTYPE domain [ <!ENTITY x SYSTEM "file:///etc/passwd"> ]>'
                domxml evil "$U1" | sed "s|<name>evil</name>|<name>evil</name><description>\&x;</description>|"
        } > "$BATS_TEST_TMPDIR/in.xml"
        refused
}

@test "a UUID that is not a UUID is refused without a sysfs write" {
        domxml evil "../../../devices/x" > "$BATS_TEST_TMPDIR/in.xml"
        refused
}

@test "two hostdevs with one UUID are refused without a sysfs write" {
        domxml evil "$U1" "$U1" > "$BATS_TEST_TMPDIR/in.xml"
        refused
}

@test "a metadata type with a slash is refused without a sysfs write" {
        domxml evil "$U1,type=../nvidia-35" > "$BATS_TEST_TMPDIR/in.xml"
        refused
}

@test "a metadata parent of .. is refused without a sysfs write" {
        domxml evil "$U1,type=nvidia-35,parent=.." > "$BATS_TEST_TMPDIR/in.xml"
        refused
}

@test "a guest name longer than libvirt allows is refused" {
        domxml evil "$U1" > "$BATS_TEST_TMPDIR/in.xml"
        run hook "$(printf 'x%.0s' $(seq 300))" prepare begin - < "$BATS_TEST_TMPDIR/in.xml"
        [ "$status" -eq 1 ]
        [ -z "$(sim_mdevs)" ]
}

@test "a guest name with spaces and INI comment characters round-trips through the record" {
        name='web ;# =:[x] 1'
        domxml "$name" "$U1" > "$BATS_TEST_TMPDIR/in.xml"
        run -0 hook "$name" prepare begin - < "$BATS_TEST_TMPDIR/in.xml"
        run hook other prepare begin - < "$BATS_TEST_TMPDIR/in.xml"
        [ "$status" -eq 1 ]
        [[ "$output" == *"held by guest '$name'"* ]]
        run -0 hook "$name" release end - < "$BATS_TEST_TMPDIR/in.xml"
        [ -z "$(sim_mdevs)" ]
}

@test "the hook finds an mdev hostdev whatever the quoting, spacing and attribute order" {
        local variant i=0
        for variant in \
                "<hostdev type=\"mdev\" mode=\"subsystem\">" \
                "<hostdev\n      mode='subsystem'\n      type = 'mdev'>" \
                "<hostdev mode='subsystem' display='a>b' type='mdev'>" \
                "<hostdev\ttype='mdev'\tmode='subsystem' >"; do
                i=$((i + 1))
                domxml "v$i" "$U1" | awk -v v="$variant" '/<hostdev /{ gsub(/\\n/, "\n", v); gsub(/\\t/, "\t", v); print "    " v; next } { print }' \
                        > "$BATS_TEST_TMPDIR/v$i.xml"
                run hook "v$i" prepare begin - < "$BATS_TEST_TMPDIR/v$i.xml"
                echo "$variant: $output"
                [ "$status" -eq 0 ]
                mdev_exists "$U1"
                [ "$(record_get "$U1" guest)" = "v$i" ]
                run -0 hook "v$i" release end - < "$BATS_TEST_TMPDIR/v$i.xml"
                mdev_absent "$U1"
        done
}

@test "a domain XML in Latin-1 or EUC-JP is converted (iconv) and prepared" {
        local enc text
        for enc in ISO-8859-1 EUC-JP; do
                case "$enc" in
                ISO-8859-1) text='caf\xe9' ;;
                EUC-JP) text='\xc6\xfc\xcb\xdc' ;;
                esac
                {
                        printf '<?xml version="1.0" encoding="%s"?>\n' "$enc"
                        domxml "g-$enc" "$U1" | sed "s|</name>|</name><title>$text</title>|"
                } > "$BATS_TEST_TMPDIR/g.xml"
                run hook "g-$enc" prepare begin - < "$BATS_TEST_TMPDIR/g.xml"
                echo "$enc: $output"
                [ "$status" -eq 0 ]
                [ "$(record_get "$U1" guest)" = "g-$enc" ]
                run -0 hook "g-$enc" release end - < "$BATS_TEST_TMPDIR/g.xml"
                mdev_absent "$U1"
        done
}

@test "a domain XML in an encoding nobody knows is refused without a sysfs write" {
        { echo '<?xml version="1.0" encoding="x-no-such-encoding"?>'; domxml evil "$U1"; } > "$BATS_TEST_TMPDIR/in.xml"
        refused
        [[ "$output" == *"encoding"* ]]
}

# plain_root: a root without the simulator, whose sysfs holds an mdev link
# that does not point to <parent>/<uuid> (sysfs_mdev_get() fails with
# EBADMSG and a reason of its own, not ENOENT).
plain_root() {
        R="$BATS_TEST_TMPDIR/plain"
        mkdir -p "$R/sys/bus/mdev/devices" "$R/etc/mdev-hooks" "$R/proc/sys/kernel/random" "$R/var/lib" "$R/run"
        cat /proc/sys/kernel/random/uuid > "$R/proc/sys/kernel/random/boot_id"
        printf '[devices]\nenabled_mdev_types = nvidia-35\n' > "$R/etc/mdev-hooks/mdev-hooks.conf"
        ln -s ../../../devices/bogus/not-an-mdev "$R/sys/bus/mdev/devices/$U1"
}

@test "prepare's message keeps the reason sysfs gave for a failed look-up" {
        plain_root
        domxml evil "$U1" > "$BATS_TEST_TMPDIR/in.xml"
        MDEV_HOOKS_ROOT="$R" run hook evil prepare begin - < "$BATS_TEST_TMPDIR/in.xml"
        echo "$output"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "mdev-hooks: evil: cannot look up mdev $U1: '/sys/bus/mdev/devices/$U1' points to '../../../devices/bogus/not-an-mdev', not to <parent>/$U1" ]]
}

@test "migrate's message keeps the reason sysfs gave for a failed look-up" {
        plain_root
        domxml evil "$U1,type=nvidia-35" > "$BATS_TEST_TMPDIR/in.xml"
        MDEV_HOOKS_ROOT="$R" run --separate-stderr hook evil migrate begin - < "$BATS_TEST_TMPDIR/in.xml"
        echo "$stderr"
        [ "$status" -eq 1 ]
        [ -z "$output" ]
        [[ "$stderr" == "mdev-hooks: evil: cannot look up mdev $U1: '/sys/bus/mdev/devices/$U1' points to '../../../devices/bogus/not-an-mdev', not to <parent>/$U1" ]]
}

# Defect: the hook's quick filter said "no mdev" to type="&#109;dev",
# which libxml2 reads as mdev: the guest started without its mdev.
@test "the hook prepares an mdev hostdev spelled with character references" {
        local variant i=0
        for variant in \
                "<hostdev mode='subsystem' type='&#109;dev'>" \
                "<hostdev mode='subsystem' type=\"&#x6d;&#x64;&#x65;&#x76;\">"; do
                i=$((i + 1))
                domxml "r$i" "$U1" | awk -v v="$variant" '/<hostdev /{ print "    " v; next } { print }' \
                        > "$BATS_TEST_TMPDIR/r$i.xml"
                grep -q '&#' "$BATS_TEST_TMPDIR/r$i.xml"
                run hook "r$i" prepare begin - < "$BATS_TEST_TMPDIR/r$i.xml"
                echo "$variant: $output"
                [ "$status" -eq 0 ]
                mdev_exists "$U1"
                [ "$(record_get "$U1" guest)" = "r$i" ]
                run -0 hook "r$i" release end - < "$BATS_TEST_TMPDIR/r$i.xml"
                mdev_absent "$U1"
        done
}

@test "the hook prepares a guest whose domain XML is UTF-16" {
        domxml u16 "$U1" | iconv -f UTF-8 -t UTF-16 > "$BATS_TEST_TMPDIR/u16.xml"
        run hook u16 prepare begin - < "$BATS_TEST_TMPDIR/u16.xml"
        echo "$output"
        [ "$status" -eq 0 ]
        mdev_exists "$U1"
        [ "$(record_get "$U1" guest)" = u16 ]
}

# big_xml NAME [SPEC...]: NAME's domain XML with the given mdevs, made larger
# than the 8 MiB the worker parses by 150000 disks, as a guest with
# thousands of disks or a big NUMA description has.
big_xml() {
        local name="$1"
        shift
        {
                domxml "$name" "$@" | sed '/<\/devices>/,$d'
                yes "    <disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='/var/lib/libvirt/images/d.qcow2'/></disk>" | head -n 80000
                printf '  </devices>\n</domain>\n'
        } > "$BATS_TEST_TMPDIR/$name.xml"
        [ "$(stat -c %s "$BATS_TEST_TMPDIR/$name.xml")" -gt $((8 * 1024 * 1024)) ]
}

# Defect: a guest without mdevs was refused when its XML was over 8 MiB.
@test "a guest without mdevs whose XML is over 8 MiB passes every operation untouched" {
        run -0 prepare web1 "$U1"
        big_xml huge
        sim_counters_reset
        for op in "prepare begin -" "release end -" "migrate begin -" "restore begin -" "reconnect begin -"; do
                # shellcheck disable=SC2086 # op is three words
                run --separate-stderr hook huge $op < "$BATS_TEST_TMPDIR/huge.xml"
                echo "$op: $status $output $stderr"
                [ "$status" -eq 0 ]
                [ -z "$output" ]
                [ -z "$stderr" ]
        done
        [ "$(sim_counter_total writes)" -eq 0 ]
        [ "$(records)" = "$U1" ]
        [ "$(record_get "$U1" guest)" = web1 ]
}

@test "an XML over 8 MiB that holds an mdev: prepare and migrate refuse it, release frees by the record" {
        run -0 prepare huge "$U1"
        big_xml huge "$U1"
        sim_counters_reset
        for op in "prepare begin -" "migrate begin -"; do
                # shellcheck disable=SC2086
                run --separate-stderr hook huge $op < "$BATS_TEST_TMPDIR/huge.xml"
                echo "$op: $status $stderr"
                [ "$status" -eq 1 ]
                [ -z "$output" ]
                [[ "$stderr" == "mdev-hooks: huge: the domain XML on stdin is larger than 8 MiB and holds an mdev hostdev"* ]]
        done
        [ "$(sim_counter_total writes)" -eq 0 ]
        run --separate-stderr hook huge release end - < "$BATS_TEST_TMPDIR/huge.xml"
        echo "$stderr"
        [ "$status" -eq 0 ]
        [[ "$stderr" == *"releasing by the record alone"* ]]
        mdev_absent "$U1"
        [ -z "$(records)" ]
}

