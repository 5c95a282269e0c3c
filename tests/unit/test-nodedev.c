/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvirt's node-device names for every kind of mdev parent (nodedev.c),
 * as src/node_device/node_device_udev.c makes them, and back.
 */
#include <stdio.h>

#include "check.h"
#include "nodedev.h"
#include "util.h"

static const struct {
        const char *subsystem; /* NULL: not known (no "subsystem" link) */
        const char *sysname;
        const char *nodedev;
} names[] = {
        /* PCI: a GPU, an SR-IOV VF, upper-case hex as given */
        { "pci", "0000:84:00.0", "pci_0000_84_00_0" },
        { "pci", "0000:3b:00.4", "pci_0000_3b_00_4" },
        { NULL, "0000:af:1f.7", "pci_0000_af_1f_7" },
        { NULL, "0000:AF:1f.7", "pci_0000_AF_1f_7" },
        /* the kernel's samples: class devices of their own name */
        { "mtty", "mtty", "mtty_mtty" },
        { NULL, "mtty", "mtty_mtty" },
        { "mdpy", "mdpy", "mdpy_mdpy" },
        { "mbochs", "mbochs", "mbochs_mbochs" },
        /* vfio-ccw subchannels */
        { "css", "0.0.0052", "css_0_0_0052" },
        { NULL, "0.0.0023", "css_0_0_0023" },
        /* vfio-ap: one fixed name */
        { "matrix", "matrix", "ap_matrix" },
        { NULL, "matrix", "ap_matrix" },
        /* every other byte becomes '_' */
        { "my-class", "dev.1", "my_class_dev_1" },
        { "c", "a\xc3\xa9z", "c_a__z" },
};

static const struct {
        const char *nodedev;
        const char *parent; /* NULL: not a name libvirt's rule gives back */
} back[] = {
        { "pci_0000_84_00_0", "0000:84:00.0" },
        { "pci_0000_AF_1f_7", "0000:af:1f.7" },
        { "pci_0000_84_00", NULL },
        { "pci_0000_84_00_0_1", NULL },
        { "pci_000g_84_00_0", NULL },
        { "mtty_mtty", "mtty" },
        { "mdpy_mdpy", "mdpy" },
        { "mtty_mdpy", NULL },
        { "css_0_0_0052", "0.0.0052" },
        { "css_0_0_005", NULL },
        { "ap_matrix", "matrix" },
        { "mtty", NULL },
        { "0000:84:00.0", NULL },
        { "a_b_a_b", "a_b" },
};

int main(void) {
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *s = nodedev_name(names[i].subsystem, names[i].sysname);

                if (!s || !streq(s, names[i].nodedev)) {
                        fprintf(stderr, "nodedev_name(%s, %s) = %s, want %s\n", strna(names[i].subsystem),
                                names[i].sysname, strna(s), names[i].nodedev);
                        abort();
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(back); i++) {
                char *p = NULL;
                int r = nodedev_to_parent(back[i].nodedev, &p);

                check(r == (back[i].parent ? 1 : 0));
                check(back[i].parent ? p && streq(p, back[i].parent) : !p);
                free(p);
        }
        return 0;
}
