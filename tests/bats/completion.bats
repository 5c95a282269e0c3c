#!/usr/bin/env bats
# bash completion for mdev-hooks (shell-completion/bash/mdev-hooks), run as
# bash runs it: the function that `complete -p` names, with COMP_WORDS and
# COMP_CWORD set, against the built CLI on a fixture host (MDEV_HOOKS_ROOT).

load common

COMPLETION="$MH_SOURCE_DIR/shell-completion/bash/mdev-hooks"

setup() {
        BASH_COMPLETION=""
        for f in /usr/share/bash-completion/bash_completion /etc/bash_completion; do
                [ -f "$f" ] && BASH_COMPLETION="$f" && break
        done
        [ -n "$BASH_COMPLETION" ] || skip "bash-completion is not installed (apt-get install bash-completion)"
        fixture_root nvidia
}

# complete WORD...: the words of the command line, the last one being
# completed; prints the candidates, one a line, sorted. The first word is the
# CLI as built, as an operator would type its path.
complete_words() {
        bash --norc --noprofile -c '
                source "$1" || exit 1
                source "$2" || exit 1
                shift 2
                fn=$(complete -p mdev-hooks | sed -n "s/.*-F \([^ ]*\) mdev-hooks$/\1/p")
                [ -n "$fn" ] || { echo "no completion for mdev-hooks" >&2; exit 1; }
                COMP_WORDS=("$@")
                COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
                COMP_LINE="${COMP_WORDS[*]}"
                COMP_POINT=${#COMP_LINE}
                "$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                printf "%s\n" "${COMPREPLY[@]}" | sort
        ' completion "$BASH_COMPLETION" "$COMPLETION" "$MH_CLI" "$@"
}

@test "complete -p names a function for mdev-hooks" {
        run bash --norc --noprofile -c 'source "$1"; source "$2"; complete -p mdev-hooks' x "$BASH_COMPLETION" "$COMPLETION"
        [ "$status" -eq 0 ]
        [ "$output" = "complete -F _mdev_hooks mdev-hooks" ]
}

@test "the first word completes to the commands the CLI lists, and help" {
        run complete_words ""
        [ "$status" -eq 0 ]
        expected=$( ("$MH_CLI" --help | sed -n '/Commands:$/,/^$/s/^  \([a-z][a-z-]*\)  .*/\1/p'; echo help) | sort)
        [ -n "$expected" ]
        [ "$output" = "$expected" ]
        run complete_words in
        [ "$output" = inventory ]
}

@test "options come from the CLI and the command's --help" {
        run complete_words --
        [ "$output" = $'--config\n--help\n--version' ]
        run complete_words types --
        [[ "$output" == *--json* ]]
        [[ "$output" == *--help* ]]
        run complete_words inventory --p
        [ "$output" = --placement ]
        run complete_words reconcile --a
        [ "$output" = --apply ]
}

@test "parent addresses come from the host: mdev-hooks types --json" {
        run complete_words types --parent 0000:8
        [ "$status" -eq 0 ]
        [ "$output" = $'0000:84:00.0\n0000:85:00.0\n0000:86:00.0\n0000:87:00.0' ]
}

@test "type names come from the host: pick TYPE, --type" {
        run complete_words pick nvidia-3
        [ "$output" = "$(printf 'nvidia-%s\n' 35 36 37 38 39)" ]
        run complete_words list --type nvidia-4
        [[ "$output" == nvidia-4* ]]
        [[ "$output" != *nvidia-3* ]]
}

@test "pick --numa-node completes the host's NUMA nodes, and its value is not taken for TYPE" {
        mkdir -p "$MDEV_HOOKS_ROOT/sys/devices/system/node/node0" "$MDEV_HOOKS_ROOT/sys/devices/system/node/node1"
        run complete_words pick --numa-node ""
        [ "$output" = $'0\n1' ]
        run complete_words pick --numa-node 1 nvidia-3
        [ "$output" = "$(printf 'nvidia-%s\n' 35 36 37 38 39)" ]
        run complete_words pick --n
        [ "$output" = --numa-node ]
}

@test "UUIDs come from the host: mdev-hooks list --json" {
        run complete_words list --uuid ""
        expected=$("$MH_CLI" list --json | sed -n 's/^ *"uuid": "\(.*\)"$/\1/p' | sort)
        [ "$(wc -l <<< "$expected")" -eq 5 ]
        [ "$output" = "$expected" ]
        run complete_words list --uuid 3b
        [ "$output" = 3b8e1d5f-0a24-4c7b-9d36-6f2a8b4c0d03 ]
}

@test "another root gives that host's names, also after a --config" {
        MDEV_HOOKS_ROOT="$BATS_TEST_TMPDIR/mtty"
        mkdir -p "$MDEV_HOOKS_ROOT"
        cp -a "$MH_FIXTURES/mtty/." "$MDEV_HOOKS_ROOT/"
        run complete_words types --parent ""
        [ "$output" = mtty ]
        run complete_words --config "$MDEV_HOOKS_ROOT/etc/mdev-hooks/mdev-hooks.conf" pick mt
        [ "$output" = $'mtty-1\nmtty-2' ]
}

@test "help completes to a command; placement to sync" {
        run complete_words help che
        [ "$output" = check-config ]
        run complete_words placement ""
        [ "$output" = sync ]
}

@test "attach and detach complete guests from libvirt (-c), then the host's types or the guest's vGPUs" {
        load libvirt-node
        uri="$(node_xml "$BATS_TEST_TMPDIR/node.xml" web1 db1:off plain)"
        run complete_words attach -c "$uri" ""
        [ "$output" = $'db1\nplain\nweb1' ]
        run complete_words attach --connect "$uri" web1 nvidia-3
        [ "$output" = "$(printf 'nvidia-%s\n' 35 36 37 38 39)" ]
        run complete_words detach -c "$uri" we
        [ "$output" = web1 ]
        run complete_words detach -c "$uri" web1 ""
        [ "$output" = aaaaaaaa-0000-4000-8000-000000000001 ]
        run complete_words attach web1 --c
        [ "$output" = $'--class\n--connect\n--count' ]
}
