/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dlfcn.h>
#include <poll.h>
#include <stdlib.h>

#include "log.h"
#include "parentwait.h"
#include "pciaddr.h"
#include "sysfs.h"

#define LIBUDEV_SONAME "libudev.so.1"

void parent_wait_close(ParentWait *w) {
        if (w->monitor)
                w->monitor_unref(w->monitor);
        if (w->lib)
                dlclose(w->lib);
        *w = (ParentWait) { .lib = NULL };
}

/* Looks up name in w->lib into *fn; false if it is not there. */
static bool parent_wait_sym(ParentWait *w, const char *name, void **fn) {
        /* ISO C has no cast from void * to a function pointer; POSIX's
         * dlsym() documents this form. */
        *fn = dlsym(w->lib, name);
        return *fn != NULL;
}

void parent_wait_open(ParentWait *w) {
        const char *root = getenv("MDEV_HOOKS_ROOT");
        __typeof__(udev_new) *udev_new_fn;
        __typeof__(udev_unref) *udev_unref_fn;
        __typeof__(udev_monitor_new_from_netlink) *monitor_new_fn;
        __typeof__(udev_monitor_enable_receiving) *enable_fn;
        struct udev *u;

        *w = (ParentWait) { .lib = NULL };
        if (root && *root)
                return;
        w->lib = dlopen(LIBUDEV_SONAME, RTLD_LAZY | RTLD_LOCAL);
        if (!w->lib) {
                log_debug("no udev monitor, polling alone: %s", dlerror());
                return;
        }
        if (!parent_wait_sym(w, "udev_new", (void **) &udev_new_fn) ||
            !parent_wait_sym(w, "udev_unref", (void **) &udev_unref_fn) ||
            !parent_wait_sym(w, "udev_monitor_new_from_netlink", (void **) &monitor_new_fn) ||
            !parent_wait_sym(w, "udev_monitor_enable_receiving", (void **) &enable_fn) ||
            !parent_wait_sym(w, "udev_monitor_unref", (void **) &w->monitor_unref) ||
            !parent_wait_sym(w, "udev_monitor_get_fd", (void **) &w->monitor_get_fd) ||
            !parent_wait_sym(w, "udev_monitor_receive_device", (void **) &w->monitor_receive_device) ||
            !parent_wait_sym(w, "udev_device_unref", (void **) &w->device_unref)) {
                log_debug("no udev monitor, polling alone: %s", dlerror());
                parent_wait_close(w);
                return;
        }
        u = udev_new_fn();
        if (!u) {
                parent_wait_close(w);
                return;
        }
        w->monitor = monitor_new_fn(u, "udev");
        udev_unref_fn(u); /* the monitor keeps its own reference */
        if (w->monitor && enable_fn(w->monitor) < 0) {
                w->monitor_unref(w->monitor);
                w->monitor = NULL;
        }
        if (!w->monitor)
                parent_wait_close(w);
}

void parent_wait_step(const ParentWait *w) {
        struct pollfd p;

        if (!w->monitor) {
                usleep(PARENT_WAIT_STEP_USEC);
                return;
        }
        p = (struct pollfd) { .fd = w->monitor_get_fd(w->monitor), .events = POLLIN };
        if (poll(&p, 1, PARENT_WAIT_STEP_USEC / 1000) > 0) {
                struct udev_device *d;

                while ((d = w->monitor_receive_device(w->monitor)))
                        w->device_unref(d);
        }
}

bool parent_wait_may_register(int rootfd, const char *parent) {
        if (!pci_address_is_valid(parent))
                return true;
        return sysfs_parent_device_present(rootfd, parent) > 0;
}
