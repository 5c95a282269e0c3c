/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A PCI device in sysfs (pcidev.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pciaddr.h"
#include "pcidev.h"

int pci_device_driver(int rootfd, const char *addr, char out[NAME_STRING_MAX]) {
        char a[PCI_ADDRESS_STRING_MAX], path[PATH_MAX], target[PATH_MAX];
        const char *base;
        ssize_t n;

        out[0] = '\0';
        if (!pci_address_normalize(addr, a))
                return 0;
        snprintf(path, sizeof path, "sys/bus/pci/devices/%s/driver", a);
        n = readlinkat(rootfd, path, target, sizeof target - 1);
        if (n < 0)
                return errno == ENOENT || errno == ENOTDIR || errno == EINVAL ? 0 : -errno;
        target[n] = '\0';
        base = strrchr(target, '/');
        base = base ? base + 1 : target;
        if (strlen(base) >= NAME_STRING_MAX)
                return 0; /* no driver's name is that long */
        memcpy(out, base, strlen(base) + 1);
        return 0;
}

int pci_device_numa_node(int rootfd, const char *addr) {
        char a[PCI_ADDRESS_STRING_MAX], path[PATH_MAX], buf[32];
        unsigned node;

        if (!pci_address_normalize(addr, a))
                return -1;
        snprintf(path, sizeof path, "sys/bus/pci/devices/%s/numa_node", a);
        if (read_small_at(rootfd, path, buf, sizeof buf) < 0 || safe_atou(buf, &node) < 0 || node > INT_MAX)
                return -1; /* "-1", or nothing to read: no node */
        return (int) node;
}
