# What the stand-ins for NVIDIA's tools share: they act on the sysfs
# simulator of $MDEV_HOOKS_ROOT/sys through its control interface
# (tests/sim/README.md, sim-nvmodes.c). Test fixtures: never installed.

NV_SIM="${MDEV_HOOKS_ROOT:?the stand-in needs MDEV_HOOKS_ROOT (the root of the simulator)}/sys/.sim"

# nv_ctl COMMAND...: sends one control command; returns 0, or the errno's
# name on stdout and 1 (EBUSY, EOPNOTSUPP, ENOSPC, ENOENT, EINVAL).
nv_ctl() {
        local err
        err="$({ printf '%s\n' "$*" > "$NV_SIM/ctl"; } 2>&1)" && return 0
        case "$err" in
        *"busy"*) echo EBUSY ;;
        *"not supported"*) echo EOPNOTSUPP ;;
        *"No space"*) echo ENOSPC ;;
        *"No such file"*) echo ENOENT ;;
        *) echo EINVAL ;;
        esac
        return 1
}

# nv_gpu ID: the PF address nvidia-smi's -i names ("00000000:41:00.0" or
# "0000:41:00.0"), in sysfs form.
nv_gpu() {
        local id="${1,,}"
        [[ "$id" =~ ^0000([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$ ]] && id="${BASH_REMATCH[1]}"
        printf '%s\n' "$id"
}

# nv_state PF KEY: one value of the simulator's "gpu PF ..." line; fails
# when there is no such GPU.
nv_state() {
        local line re=" $2=([^ ]*)"
        line="$(grep "^gpu $1 " "$NV_SIM/state")" || return 1
        [[ "$line" =~ $re ]] || return 1
        printf '%s\n' "${BASH_REMATCH[1]}"
}

# nv_busid PF: nvidia-smi's form of a PCI address (8-digit domain, upper case).
nv_busid() {
        local up="${1^^}"
        printf '0000%s\n' "$up"
}
