/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PCI addresses as the kernel names its devices: dddd:bb:ss.f (domain, bus,
 * slot, function in hex), e.g. "0000:84:00.0". The config names GPUs and
 * SR-IOV physical functions by them, sysfs tells a PCI parent from a virtual
 * one (mtty) by them, the udev helper checks a pci event's device name, a
 * VF's record is keyed by one, and a PCI hostdev's <address domain= bus=
 * slot= function=> is one in four parts.
 *
 * The one parser of the project: one rule (hex digits in either case, slot
 * at most 0x1f, function at most 7), and one form out (lower case, as sysfs
 * names the device).
 *
 * libc only (lib/meson.build, base_sources).
 */
#pragma once

#include <stdbool.h>

/* "dddd:bb:ss.f" plus NUL. */
#define PCI_ADDRESS_STRING_MAX 13

/* An address in its four parts. */
typedef struct PciAddress {
        unsigned domain;   /* <= 0xffff */
        unsigned bus;      /* <= 0xff */
        unsigned slot;     /* <= 0x1f */
        unsigned function; /* <= 7 */
} PciAddress;

/* dddd:bb:ss.f, hex digits in either case, slot <= 0x1f, function <= 7. */
bool pci_address_is_valid(const char *s);
/* The same test; when s passes, its four parts in *ret (may be NULL).
 * -EINVAL for anything else, *ret untouched. */
int pci_address_split(const char *s, PciAddress *ret);
/* s as sysfs names it (lower case) in out, when valid; false, out untouched,
 * when not. out may be s itself. */
bool pci_address_normalize(const char *s, char out[PCI_ADDRESS_STRING_MAX]);
/* The four parts as sysfs names them; -EINVAL when one is out of range. */
int pci_address_format(const PciAddress *a, char out[PCI_ADDRESS_STRING_MAX]);
