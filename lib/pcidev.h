/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A PCI device in sysfs (sys/bus/pci/devices/<address>/): what every
 * backend of PCI functions asks of one, whatever its vendor.
 */
#pragma once

#include "util.h"

/* The name of the driver the device at addr is bound to, in out ("" when
 * none is bound, or there is no such device or address): 0, or -errno
 * when it cannot be read. */
int pci_device_driver(int rootfd, const char *addr, char out[NAME_STRING_MAX]);

/* The NUMA node of the device at addr, as the kernel shows it
 * (sys/bus/pci/devices/<addr>/numa_node): 0 or more, or -1 when it has
 * none (a single-node host, firmware that does not say), when addr is no
 * PCI address (mtty) or no such device, or when the file cannot be read.
 * One small read. */
int pci_device_numa_node(int rootfd, const char *addr);
