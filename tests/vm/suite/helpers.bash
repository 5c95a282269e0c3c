# Shared by the VM tier's bats files (run inside the guest, as root, against
# the real /sys, with this checkout installed under /usr and /etc).

MH_VM_OUT=${MH_VM_OUT:-/mh-out}
MTTY_TYPES=/sys/class/mdev_bus/mtty/mdev_supported_types
MDEV_DEVS=/sys/bus/mdev/devices
HOOK=/etc/libvirt/hooks/qemu.d/mdev-hooks
CONF=/etc/mdev-hooks/mdev-hooks.conf
LEDGER=/var/lib/mdev-hooks

# Forgets the whole record: its files and the two indexes beside them (an
# index left behind would describe records that are gone, and hide records a
# test writes by hand). The installed udev rules run mdev-hooks-udev for every
# mdev removed, and it rewrites that mdev's record (marks it lost): wait for
# those runs first, or one of them writes into the directory while rm empties
# it ("Directory not empty"), or leaves a record behind for the next test.
vm_record_clear() {
        vm_udev_settle || return 1
        rm -rf "$LEDGER" "$LEDGER.by-guest" "$LEDGER.by-parent"
}

# Loads mtty (and with it mdev, vfio) and waits for the parent in sysfs.
vm_mtty_load() {
        [ -d "$MTTY_TYPES" ] && return 0
        modprobe mtty
        udevadm settle -t 30 || true
        local _
        for _ in $(seq 50); do
                [ -d "$MTTY_TYPES" ] && return 0
                sleep 0.1
        done
        echo "mtty did not register" >&2
        return 1
}

vm_avail() {
        cat "$MTTY_TYPES/$1/available_instances"
}

vm_mdev_exists() {
        [ -e "$MDEV_DEVS/$1" ]
}

# In bats "! cmd" never fails a test: use this for "does not exist".
vm_mdev_gone() {
        [ ! -e "$MDEV_DEVS/$1" ]
}

vm_mdev_type() {
        basename "$(readlink "$MDEV_DEVS/$1/mdev_type")"
}

# Removes every mdev on the host (between scenarios).
vm_remove_all_mdevs() {
        local d
        for d in "$MDEV_DEVS"/*; do
                [ -e "$d/remove" ] || continue
                echo 1 > "$d/remove" || true
        done
        vm_udev_settle
}

# Waits until udev has run everything queued (the installed rules run
# mdev-hooks-udev for each mdev removed or parent registered); a queue that
# does not drain is an error, not something to race.
vm_udev_settle() {
        udevadm settle -t 120 && return 0
        echo "udev's queue did not drain within 120 s; udevd and what it runs:" >&2
        ps -eo pid,stat,etime,args | grep -E '[u]dev|[m]dev-hooks' >&2 || true
        return 1
}

# vm_config TYPE [KEY=VALUE...]: a config enabling TYPE on the one parent
# mtty (DESIGN: a parent serves one type), with extra [hooks] keys.
vm_config() {
        local type=$1
        shift
        mkdir -p /etc/mdev-hooks
        {
                echo "[devices]"
                echo "enabled_mdev_types = $type"
                echo
                echo "[mdev_$type]"
                echo "device_addresses = mtty"
                if [ $# -gt 0 ]; then
                        echo
                        echo "[hooks]"
                        local kv
                        for kv in "$@"; do
                                echo "${kv%%=*} = ${kv#*=}"
                        done
                fi
        } > "$CONF"
        chmod 644 "$CONF"
}

# vm_domxml NAME UUID [MDEV_UUID:TYPE...]: a type='qemu' domain that sits in
# its firmware (no disk), with one mdev hostdev per MDEV_UUID and this
# project's metadata naming each one's type.
vm_domxml() {
        local name=$1 uuid=$2
        shift 2
        local m
        echo "<domain type='qemu'>"
        echo "  <name>$name</name>"
        echo "  <uuid>$uuid</uuid>"
        echo "  <memory unit='MiB'>32</memory>"
        echo "  <vcpu>1</vcpu>"
        echo "  <metadata>"
        echo "    <mh:mdevs xmlns:mh='http://mdev-hooks.org/xmlns/domain/1.0'>"
        for m in "$@"; do
                echo "      <mh:mdev uuid='${m%%:*}' type='${m#*:}'/>"
        done
        echo "    </mh:mdevs>"
        echo "  </metadata>"
        echo "  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>"
        echo "  <devices>"
        echo "    <emulator>/usr/bin/qemu-system-x86_64</emulator>"
        for m in "$@"; do
                echo "    <hostdev mode='subsystem' type='mdev' model='vfio-pci'>"
                echo "      <source><address uuid='${m%%:*}'/></source>"
                echo "    </hostdev>"
        done
        echo "    <video><model type='none'/></video>"
        echo "    <memballoon model='none'/>"
        echo "  </devices>"
        echo "</domain>"
}

# vm_hook GUEST OP SUBOP EXTRA < XML: the hook exactly as libvirt runs it.
vm_hook() {
        "$HOOK" "$@"
}

# The record of one mdev: "key = value" lines; vm_record_get UUID KEY.
vm_record_get() {
        sed -n "s/^$2 *= *//p" "$LEDGER/$1" 2>/dev/null | head -1
}

# libvirtd as the suite runs it: in the background, its own session, its
# output in /var/log/libvirt/libvirtd.out, no fd of bats inherited.
vm_libvirtd_start() {
        mkdir -p /var/log/libvirt /run/libvirt
        (cd / && exec setsid libvirtd >> /var/log/libvirt/libvirtd.out 2>&1 < /dev/null 3>&- 4>&-) &
        disown 2>/dev/null || true
}

# Waits up to $1 seconds (default 240) for libvirtd to answer.
vm_libvirtd_wait() {
        local _
        for _ in $(seq "${1:-240}"); do
                virsh -c qemu:///system version > /dev/null 2>&1 && return 0
                sleep 1
        done
        echo "libvirtd did not answer within ${1:-240} s" >&2
        tail -20 /var/log/libvirt/libvirtd.out >&2
        return 1
}

# The Debian release of the image ("bookworm", "trixie"), from the runner.
vm_suite_name() {
        cat /mh/suite-name 2>/dev/null || echo bookworm
}

# --- a second libvirt "host" in the same VM (50-migrate.bats) ---------------
# Host B is a second libvirtd in its own mount and UTS namespaces (unshare
# -mu): its own hostname and host_uuid, and its own /etc/libvirt, /run/libvirt,
# /var/lib/libvirt, /var/log, /var/cache and /etc/mdev-hooks (config), bound
# from $HOSTB. It shares the one kernel, hence sysfs and mtty's parent, with
# host A (the VM's own libvirtd): mdev-hooks' record (/var/lib/mdev-hooks)
# and lock (/run/mdev-hooks) describe one kernel's mdevs, so both hosts
# share them (two records of one sysfs would each take the other's mdevs
# for unrecorded ones, and the destination would borrow the very mdev the
# source's QEMU holds open). The network namespace is shared: migrations go
# over tcp://127.0.0.1.
HOSTB=/srv/hostb
HOSTB_SOCK=$HOSTB/run-libvirt/libvirt-sock
HOSTB_URI="qemu+unix:///system?socket=$HOSTB_SOCK"
HOSTB_CONF=$HOSTB/etc-mdev-hooks/mdev-hooks.conf
HOSTB_UUID=b0b0b0b0-0000-4000-8000-00000000000b

# Copies host A's libvirt configuration (with the installed hooks) for B.
vm_hostb_prepare() {
        local d
        rm -rf "$HOSTB"
        for d in etc-libvirt run-libvirt var-lib-libvirt var-log/libvirt var-cache etc-mdev-hooks; do
                mkdir -p "$HOSTB/$d"
        done
        cp -a /etc/libvirt/. "$HOSTB/etc-libvirt/"
        cp -a /var/lib/libvirt/. "$HOSTB/var-lib-libvirt/"
        rm -f "$HOSTB/etc-libvirt/qemu/"*.xml
        echo "host_uuid = \"$HOSTB_UUID\"" >> "$HOSTB/etc-libvirt/libvirtd.conf"
        mkdir -p /etc/mdev-hooks
}

vm_hostb_start() {
        (cd / && exec setsid unshare -mu --propagation private -- /bin/bash -c '
                set -e
                hb=$1
                echo mhvm-b > /proc/sys/kernel/hostname
                mount --bind "$hb/etc-libvirt" /etc/libvirt
                mount --bind "$hb/run-libvirt" /run/libvirt
                mount --bind "$hb/var-lib-libvirt" /var/lib/libvirt
                mount --bind "$hb/var-log" /var/log
                mount --bind "$hb/var-cache" /var/cache
                mount --bind "$hb/etc-mdev-hooks" /etc/mdev-hooks
                # libvirt names cgroup scopes by the domain: A and B would collide.
                ! mountpoint -q /sys/fs/cgroup || umount -R /sys/fs/cgroup
                exec libvirtd --pid-file /run/libvirt/libvirtd-b.pid >> /var/log/libvirt/libvirtd.out 2>&1
        ' hostb "$HOSTB" < /dev/null > /dev/null 2>&1 3>&- 4>&-) &
        disown 2>/dev/null || true
}

vm_hostb_wait() {
        local _
        for _ in $(seq "${1:-240}"); do
                virsh -c "$HOSTB_URI" version > /dev/null 2>&1 && return 0
                sleep 1
        done
        echo "host B's libvirtd did not answer within ${1:-240} s" >&2
        tail -20 "$HOSTB/var-log/libvirt/libvirtd.out" >&2
        return 1
}

vm_hostb_stop() {
        local pid
        pid=$(cat "$HOSTB/run-libvirt/libvirtd-b.pid" 2>/dev/null) || return 0
        kill "$pid" 2>/dev/null || return 0
        local _
        for _ in $(seq 300); do
                kill -0 "$pid" 2>/dev/null || return 0
                sleep 0.2
        done
        echo "host B's libvirtd ($pid) did not exit within 60 s" >&2
        return 1
}
