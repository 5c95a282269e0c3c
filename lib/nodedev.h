/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvirt's node-device names for mdev parents, which Nova puts after the
 * host name in a resource provider's name and accepts in device_addresses.
 *
 * libvirt (src/node_device/node_device_udev.c, nodeDeviceGenerateName())
 * names a device "<subsystem>_<sysname>" and turns every byte that is not
 * an ASCII letter or digit into '_':
 *
 *   PCI device 0000:84:00.0            pci_0000_84_00_0
 *   the mtty sample (class mtty)       mtty_mtty
 *   a vfio-ccw subchannel 0.0.0052     css_0_0_0052
 *   the vfio-ap matrix                 ap_matrix   (fixed: its subsystem and
 *                                                   sysname are both "matrix")
 *
 * Pure functions (libc only); sysfs.c reads the subsystem of a parent.
 */
#pragma once

/* The node-device name of the parent sysname in subsystem. subsystem NULL
 * (unknown: a test tree without the "subsystem" link) is taken from the
 * name's kind: "pci" for a PCI address, "css" for a subchannel "0.0.0052",
 * "matrix" for "matrix", else the name itself (the kernel's samples, such as
 * mtty, make a device of their class's name). A new string, NULL on
 * allocation failure. */
char *nodedev_name(const char *subsystem, const char *sysname);

/* The sysfs name of the parent that a node-device name stands for, where
 * libvirt's rule can be read backwards: "pci_0000_84_00_0" -> "0000:84:00.0",
 * "css_0_0_0052" -> "0.0.0052", "ap_matrix" -> "matrix", and "<s>_<s>" ->
 * "<s>" (mtty_mtty -> mtty). Returns 1 and a new string in *ret; 0 when name
 * is not such a name (*ret untouched); -ENOMEM. */
int nodedev_to_parent(const char *name, char **ret);
