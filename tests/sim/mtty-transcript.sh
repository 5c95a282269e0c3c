#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# usage: mtty-transcript.sh SYSDIR
#
# Runs one fixed sequence against the kernel's mtty sample under SYSDIR (the
# directory that plays /sys: the simulator's mount, or /sys itself in the VM
# tier) and prints one stable line per step: errno names, never messages.
# tests/sim/mtty-transcript.expected holds what both must print, so the
# simulator is held against the real kernel.
#
# POSIX sh and coreutils only (it runs inside the VM image), no simulator
# control features. It expects mtty loaded with no mdevs, and removes the
# mdevs it made before it ends.
set -u

if [ $# -ne 1 ]; then
	echo "usage: $0 SYSDIR" >&2
	exit 2
fi
sys=$1
types=$sys/class/mdev_bus/mtty/mdev_supported_types
t1=$types/mtty-1
t2=$types/mtty-2
devs=$sys/bus/mdev/devices
tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp"' EXIT

# Fixed UUIDs: u1 holds mtty-2, u2 (written upper case) and u3 mtty-1, the
# fill loop uses f01... (mtty-2) and g01... (mtty-1).
u1=7c3f1d9e-0001-4c2a-9b1e-5a3c2e7d0001
u2_upper=7C3F1D9E-0002-4C2A-9B1E-5A3C2E7D0002
u2=7c3f1d9e-0002-4c2a-9b1e-5a3c2e7d0002
u3=7c3f1d9e-0003-4c2a-9b1e-5a3c2e7d0003

# The errno name from the coreutils message in $tmp.
errname() {
	case $(cat "$tmp") in
	*"File exists"*) echo EEXIST ;;
	*"No space left on device"*) echo ENOSPC ;;
	*"Invalid argument"*) echo EINVAL ;;
	*"Permission denied"*) echo EACCES ;;
	*"No such file or directory"*) echo ENOENT ;;
	*"Device or resource busy"*) echo EBUSY ;;
	*"Too many users"*) echo EUSERS ;;
	*"No such device"*) echo ENODEV ;;
	*) echo "unknown-error: $(head -n 1 "$tmp")" ;;
	esac
}

# put TEXT FILE: writes TEXT to FILE in one write(2), as "echo TEXT > FILE"
# does; prints ok or the errno name. dd opens the file itself, so the
# message does not depend on the shell.
put() {
	if printf '%s' "$1" | dd of="$2" conv=notrunc status=none 2>"$tmp"; then
		echo ok
	else
		errname
	fi
}

avail() {
	a1=$(cat "$t1/available_instances" 2>/dev/null || echo "?")
	a2=$(cat "$t2/available_instances" 2>/dev/null || echo "?")
	echo "mtty-1=$a1 mtty-2=$a2"
}

# step LABEL RESULT: one line of the transcript.
step() {
	echo "$1: $2 | $(avail)"
}

exists() {
	if [ -e "$devs/$1" ]; then echo present; else echo absent; fi
}

step "start" "-"
step "create mtty-2 u1" "$(put "$u1
" "$t2/create")"
step "u1 in bus/mdev/devices" "$(exists "$u1"), type $(basename "$(readlink "$devs/$u1/mdev_type")")"
step "u1 in mtty-2/devices" "$(if [ -e "$t2/devices/$u1" ]; then echo present; else echo absent; fi)"
step "create mtty-2 u1 again" "$(put "$u1
" "$t2/create")"
step "create mtty-1 u1 (other type)" "$(put "$u1
" "$t1/create")"
step "create mtty-1 not-a-uuid" "$(put "not-a-uuid
" "$t1/create")"
step "create mtty-1 short uuid" "$(put "7c3f1d9e-0004-4c2a-9b1e-5a3c2e7d000
" "$t1/create")"
step "create mtty-1 u2 upper case" "$(put "$u2_upper
" "$t1/create")"
step "u2 in lower case" "$(exists "$u2")"
step "create mtty-1 u3 without newline" "$(put "$u3" "$t1/create")"
step "read mtty-1/create" "$(if cat "$t1/create" >/dev/null 2>"$tmp"; then echo ok; else errname; fi)"
step "remove u2 with 0" "$(put "0
" "$devs/$u2/remove"), u2 $(exists "$u2")"

# Fill the pool with mtty-2 (2 ports each) until ENOSPC.
i=1
while [ $i -le 13 ]; do
	u=$(printf '7c3f1d9e-00f0-4c2a-9b1e-5a3c2e7d%04d' $i)
	r=$(put "$u
" "$t2/create")
	step "fill mtty-2 f$i" "$r"
	[ "$r" = ok ] || break
	i=$((i + 1))
done
nf=$((i - 1))

step "remove f1" "$(put "1
" "$devs/7c3f1d9e-00f0-4c2a-9b1e-5a3c2e7d0001/remove")"
# Two ports free: one mtty-2 or two mtty-1. Fill with mtty-1.
j=1
while [ $j -le 4 ]; do
	u=$(printf '7c3f1d9e-00f1-4c2a-9b1e-5a3c2e7d%04d' $j)
	r=$(put "$u
" "$t1/create")
	step "fill mtty-1 g$j" "$r"
	[ "$r" = ok ] || break
	j=$((j + 1))
done
ng=$((j - 1))

step "remove u1" "$(put "1
" "$devs/$u1/remove"), u1 $(exists "$u1")"
step "remove u1 again" "$(put "1
" "$devs/$u1/remove")"

# Clean up: every mdev this script made.
ok=0 bad=0
for u in "$u2" "$u3"; do
	if [ "$(put "1
" "$devs/$u/remove")" = ok ]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
done
i=2
while [ $i -le "$nf" ]; do
	u=$(printf '7c3f1d9e-00f0-4c2a-9b1e-5a3c2e7d%04d' $i)
	if [ "$(put "1
" "$devs/$u/remove")" = ok ]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
	i=$((i + 1))
done
j=1
while [ $j -le "$ng" ]; do
	u=$(printf '7c3f1d9e-00f1-4c2a-9b1e-5a3c2e7d%04d' $j)
	if [ "$(put "1
" "$devs/$u/remove")" = ok ]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
	j=$((j + 1))
done
step "remove the rest" "$ok removed, $bad failed"
step "mdevs left" "$(ls "$devs" | wc -l | tr -d ' ')"
