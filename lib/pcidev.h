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
