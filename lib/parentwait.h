/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Waiting for an mdev parent to register (alloc.c's parent_wait): a udev
 * monitor that wakes the wait when a device changes (a parent registering
 * sends "change" with MDEV_STATE=registered), and whether a parent may still
 * register at all.
 *
 * libudev is loaded here (dlopen), when a prepare has to wait, and not
 * linked: every other run of the hook then maps one library less
 * (BENCHMARKS.md). Without it (not installed, no udevd, a container) or when
 * MDEV_HOOKS_ROOT points at a test tree, whose parents send no uevents, the
 * wait polls alone: it sees a parent that registers within
 * PARENT_WAIT_STEP_USEC, not at once.
 */
#pragma once

#include <stdbool.h>

#include <libudev.h>

/* How long one parent_wait_step() sleeps at most. */
#define PARENT_WAIT_STEP_USEC 50000

typedef struct ParentWait {
        void *lib;
        struct udev_monitor *monitor;
        __typeof__(udev_monitor_unref) *monitor_unref;
        __typeof__(udev_monitor_get_fd) *monitor_get_fd;
        __typeof__(udev_monitor_receive_device) *monitor_receive_device;
        __typeof__(udev_device_unref) *device_unref;
} ParentWait;

/* Loads libudev and opens a monitor; on any failure w polls alone. */
void parent_wait_open(ParentWait *w);
void parent_wait_close(ParentWait *w);
/* Sleeps up to PARENT_WAIT_STEP_USEC, less when a uevent arrives. */
void parent_wait_step(const ParentWait *w);
/* Whether an unregistered configured parent may still register: a PCI device
 * that is there (its vendor driver is still starting), or a virtual parent
 * such as mtty, whose device appears only when its module registers it. A PCI
 * address with no device behind it will not come: no wait for it. */
bool parent_wait_may_register(int rootfd, const char *parent);
