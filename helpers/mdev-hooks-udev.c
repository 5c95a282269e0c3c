/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-udev: run by udev (udev-rules/60-mdev-hooks.rules) as
 *
 *     mdev-hooks-udev %k
 *
 * with the event's properties (ACTION, DEVPATH, SUBSYSTEM, SEQNUM, and
 * MDEV_STATE for a parent) in its environment. It keeps the record true as
 * mdev parents, mdevs and SR-IOV physical functions come and go; the logic is
 * in uevent.c. It never fails its event: it logs what it could not do and
 * exits 0.
 */
#include <libudev.h>

#include "log.h"
#include "uevent.h"
#include "util.h"

DEFINE_POINTER_CLEANUP(struct udev, udev_unref)
DEFINE_POINTER_CLEANUP(struct udev_device, udev_device_unref)

/* libudev (systemd 252) cuts the strings of environ at '=' in place while it
 * reads the event, which leaves getenv() blind afterwards (MDEV_HOOKS_ROOT,
 * PATH): hand it a copy of the environment instead of the real one. */
static struct udev_device *device_from_environment(struct udev *udev, char ***ret_copy) {
        extern char **environ;
        _cleanup_strv_free_ char **copy = NULL;
        struct udev_device *dev;
        char **saved = environ;

        for (char **e = environ; e && *e; e++)
                if (strv_extend(&copy, *e) < 0)
                        return NULL;
        if (!copy)
                return NULL;
        environ = copy;
        dev = udev_device_new_from_environment(udev);
        environ = saved;
        *ret_copy = steal_pointer(&copy);
        return dev;
}

int main(int argc, char **argv) {
        _cleanup_strv_free_ char **env_copy = NULL; /* freed after the device */
        _cleanup_(udev_unrefp) struct udev *udev = NULL;
        _cleanup_(udev_device_unrefp) struct udev_device *dev = NULL;
        _cleanup_close_ int rootfd = -1;
        Uevent ev;
        int r;

        /* udev always sets ACTION: without it, a person is asking. */
        if (argc == 2 && !getenv("ACTION") && streq(argv[1], "--help")) {
                puts("Usage: mdev-hooks-udev KERNEL-NAME   (run by udev, with the event in its\n"
                     "       environment)\n"
                     "\n"
                     "The udev helper of mdev-hooks, run by 60-mdev-hooks.rules when an mdev\n"
                     "parent registers or unregisters, an mdev appears or goes, or an SR-IOV\n"
                     "physical function appears. It brings the record (/var/lib/mdev-hooks)\n"
                     "up to date, recreates lost mdevs (recreate = eager) and enables the VFs\n"
                     "of the PFs named in [sriov]. It logs to syslog and never fails an event.\n"
                     "\n"
                     "  --help     show this help\n"
                     "  --version  show the version\n"
                     "\n"
                     "See mdev-hooks-udev(8) and mdev-hooks.conf(5).");
                return 0;
        }
        if (argc == 2 && !getenv("ACTION") && streq(argv[1], "--version")) {
                puts("mdev-hooks-udev " PACKAGE_VERSION);
                return 0;
        }
        log_open("mdev-hooks-udev", LOG_TARGET_SYSLOG | LOG_TARGET_STDERR);

        /* The event as udev passes it: no access to sysfs here. */
        udev = udev_new();
        if (udev)
                dev = device_from_environment(udev, &env_copy);
        if (!dev) {
                log_warning("not started by udev: ACTION, DEVPATH, SUBSYSTEM and SEQNUM must be set; nothing done");
                return 0;
        }

        r = uevent_classify(udev_device_get_action(dev),
                            udev_device_get_subsystem(dev),
                            udev_device_get_devpath(dev),
                            udev_device_get_property_value(dev, "MDEV_STATE"),
                            argc > 1 ? argv[1] : NULL,
                            &ev);
        if (r < 0) {
                log_warning("%s: event ignored", error_get(r));
                return 0;
        }
        if (ev.kind == UEVENT_IGNORE)
                return 0;

        log_set_subject(ev.name);
        r = root_open(&rootfd);
        if (r >= 0)
                r = uevent_handle(rootfd, &ev);
        if (r < 0)
                log_error("%s event not handled: %s", uevent_kind_to_string(ev.kind), error_get(r));
        log_close();
        return 0;
}
