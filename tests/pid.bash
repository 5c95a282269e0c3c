# pid_running PID: true while PID is a live process. A process that has
# exited but is not reaped yet (a zombie) counts as ended: "kill -0" would
# still succeed for it, and where PID 1 reaps late (some containers' init)
# or the process is our own unwaited child, a wait on "kill -0" lasts until
# its timeout on every call.
pid_running() {
        local stat
        stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
        # the state follows the command name's closing parenthesis
        stat=${stat##*) }
        [ "${stat%% *}" != Z ]
}
