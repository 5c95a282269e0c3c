#!/usr/bin/env bats
# What an operator meets first: the man pages (mandoc -Tlint reports
# nothing, and they name each other in SEE ALSO) and --help / --version on
# every program and command (--help fits one 24-line screen).

load common

MANS=(mdev-hooks.8 mdev-hooks.conf.5 mdev-hooks-qemu.8 mdev-hooks-udev.8)

setup() {
        MH_RECONCILE="$(dirname "$MH_UDEV")/mdev-hooks-reconcile"
        MH_PLACEMENT="$(dirname "$MH_UDEV")/mdev-hooks-placement"
}

@test "mandoc -Tlint reports nothing for any man page" {
        command -v mandoc > /dev/null || skip "mandoc is not installed (apt-get install mandoc)"
        for m in "${MANS[@]}"; do
                run mandoc -Tlint "$MH_SOURCE_DIR/doc/$m"
                echo "$m: $output"
                [ "$status" -eq 0 ]
                [ -z "$output" ]
        done
}

@test "every man page has EXAMPLES and SEE ALSO naming the three others" {
        for m in "${MANS[@]}"; do
                grep -qx '.SH EXAMPLES' "$MH_SOURCE_DIR/doc/$m"
                see_also=$(sed -n '/^\.SH SEE ALSO/,$p' "$MH_SOURCE_DIR/doc/$m")
                for other in "${MANS[@]}"; do
                        [ "$other" = "$m" ] && continue
                        name=${other%.*} section=${other##*.}
                        echo "$m -> $name($section)"
                        grep -qx ".BR $name ($section)[,]*" <<< "$see_also"
                done
        done
}

@test "the config page documents every key and section lib/config.c accepts" {
        page="$MH_SOURCE_DIR/doc/mdev-hooks.conf.5"
        # the keys config.c compares with, and its sections
        keys=$(grep -oE 'streq\(key, "[a-z_]+"\)' "$MH_SOURCE_DIR/lib/config.c" | grep -oE '"[a-z_]+"' | tr -d '"' | sort -u)
        [ -n "$keys" ]
        for k in $keys; do
                echo "key $k"
                grep -q "$k" "$page"
        done
        for s in '\[devices\]' '\[mdev_' '\[hooks\]' '\[sriov\]'; do
                grep -q "^\.SH $s" "$page"
        done
}

# usage: check_help_version NAME PROGRAM [ARGS...]: --help (one screen, a
# Usage line, exit 0) and --version ("NAME VERSION", exit 0).
check_help_version() {
        local name="$1" version
        shift
        version=$(sed -n "s/^ *version : '\([^']*\)'.*/\1/p" "$MH_SOURCE_DIR/meson.build" | head -1)
        run "$@" --help
        echo "$* --help: $output"
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == [Uu]sage:* ]]
        [ "${#lines[@]}" -le 24 ]
        [ "$(printf '%s\n' "$output" | wc -L)" -le 80 ]
        run "$@" --version
        [ "$status" -eq 0 ]
        [ "$output" = "$name $version" ]
}

@test "the CLI: --help and --version, one screen" {
        check_help_version mdev-hooks "$MH_CLI"
}

@test "every CLI command: --help and --version, one screen" {
        commands=$("$MH_CLI" --help | sed -n '/Commands:$/,/^$/s/^  \([a-z][a-z-]*\)  .*/\1/p')
        [[ "$commands" == *types*list*inventory* ]]
        for c in $commands; do
                case "$c" in
                placement) check_help_version mdev-hooks "$MH_CLI" placement sync ;;
                *) check_help_version mdev-hooks "$MH_CLI" "$c" ;;
                esac
        done
}

@test "the qemu hook: --help and --version, one screen, no worker loaded" {
        check_help_version mdev-hooks-qemu "$MH_QEMU_HOOK"
        [[ "$output" != *error* ]]
}

@test "the udev helper: --help and --version when not run by udev" {
        check_help_version mdev-hooks-udev env -u ACTION "$MH_UDEV"
}

@test "the udev helper run by udev takes --help as a device name, not as a request" {
        fixture_root mtty
        ACTION=add SUBSYSTEM=mdev DEVPATH=/devices/virtual/mtty/mtty/--help SEQNUM=1 run "$MH_UDEV" --help
        [ "$status" -eq 0 ]
        [[ "$output" != Usage:* ]]
}

@test "the reconcile program: --help and --version" {
        check_help_version mdev-hooks-reconcile "$MH_RECONCILE"
}

@test "the placement program: --help and --version" {
        check_help_version mdev-hooks-placement "$MH_PLACEMENT"
}

@test "the CLI loads neither libvirt nor libcurl: reconcile and placement sync run in programs of their own" {
        local libs
        libs=$(ldd "$MH_CLI")
        [[ "$libs" != *libvirt* ]]
        [[ "$libs" != *libcurl* ]]
        [[ "$(ldd "$MH_RECONCILE")" == *libvirt* ]]
        [[ "$(ldd "$MH_PLACEMENT")" == *libcurl* ]]
        # and the CLI still runs each: bad usage comes back from the program behind it
        run "$MH_CLI" placement sync --bogus
        [ "$status" -eq 2 ]
        [[ "$output" == *"unknown option"* ]]
}
