/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The udev helper's logic (doc/design.md §1): what a kernel event means for the
 * record and for SR-IOV, and carrying it out (SR-IOV itself: sriov.h). The program
 * (helpers/mdev-hooks-udev.c) reads the event with libudev, classifies it
 * here and hands it to uevent_handle().
 *
 * The events (drivers/vfio/mdev/mdev_core.c, drivers/base/core.c):
 *
 *   change, MDEV_STATE=registered    on the parent (pci, mtty, ...), after
 *                                     class/mdev_bus/<parent> and its types exist
 *   change, MDEV_STATE=unregistered  on the parent, after its mdevs are gone
 *   mdev add / bind                  bus/mdev/devices/<uuid> exists; the
 *                                     mdev_type link may not exist yet
 *   mdev remove                      the mdev is already gone from bus/mdev
 *   pci add / bind                   a PCI device, maybe a PF named in [sriov]
 *
 * Every record decision is made under the host-wide lock from what sysfs
 * shows at that moment, never from the action alone, so that events that
 * arrive late, twice or out of order, and the hooks' own creates and removes
 * (made under the same lock), leave the record true and warn about nothing.
 */
#pragma once

#include <stdbool.h>

#include "enumtable.h"
#include "util.h"

typedef enum UeventKind {
        UEVENT_IGNORE,              /* does not concern mdev-hooks: exit at once */
        UEVENT_PARENT_REGISTERED,   /* change with MDEV_STATE=registered */
        UEVENT_PARENT_UNREGISTERED, /* change with MDEV_STATE=unregistered */
        UEVENT_MDEV,                /* an mdev appeared or went: bring its record up to date */
        UEVENT_PCI,                 /* pci add/bind: enable VFs if [sriov] names it */
        _UEVENT_KIND_MAX,
        _UEVENT_KIND_INVALID = -EINVAL,
} UeventKind;

typedef struct Uevent {
        UeventKind kind;
        bool add;                   /* ACTION=add (UEVENT_PCI: the driver may not be bound yet) */
        char name[NAME_STRING_MAX]; /* %k: the parent, the mdev's UUID (lower case) or the PCI address */
} Uevent;

ENUM_DECL(uevent_kind, UeventKind);

/* Decides what an event is from udev's properties, without any I/O. kernel is
 * %k; NULL means the last component of devpath. Anything that does not concern
 * mdev-hooks is UEVENT_IGNORE. -EINVAL (with a message) when the device's name
 * is not safe as a path component. */
int uevent_classify(const char *action, const char *subsystem, const char *devpath,
                    const char *mdev_state, const char *kernel, Uevent *ret);

/* Carries out a classified event against the root dirfd: reads the config
 * only when the event may concern it, waits for the lock at most
 * min(lock_timeout, UEVENT_LOCK_TIMEOUT_MAX) seconds, and logs each
 * outcome (log.h; held until the record changes are durable). Returns 0,
 * or -errno (with error_set()) when it could not do its work; the udev
 * helper exits 0 either way. */
#define UEVENT_LOCK_TIMEOUT_MAX 10
int uevent_handle(int rootfd, const Uevent *ev);

/* A GPU's boot plan has brought pf to its declared state (`mdev-hooks gpu
 * plan`): its records are brought in line with sysfs as a parent's
 * registration brings an mdev parent's, and with recreate = eager its
 * guests' VFs are programmed again (*ret_made of them). As
 * uevent_handle(), but the error is the caller's to report. */
int uevent_gpu_ready(int rootfd, const char *pf, unsigned *ret_made);
