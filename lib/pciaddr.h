/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PCI addresses as the kernel names its devices: dddd:bb:ss.f (domain, bus,
 * slot, function in hex), e.g. "0000:84:00.0". The config names GPUs and
 * SR-IOV physical functions by them, sysfs tells a PCI parent from a virtual
 * one (mtty) by them, and the udev helper checks a pci event's device name.
 *
 * libc only (lib/meson.build, base_sources).
 */
#pragma once

#include <stdbool.h>

/* "dddd:bb:ss.f" plus NUL. */
#define PCI_ADDRESS_STRING_MAX 13

/* dddd:bb:ss.f, hex digits in either case, slot <= 0x1f, function <= 7. */
bool pci_address_is_valid(const char *s);
