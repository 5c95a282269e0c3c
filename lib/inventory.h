/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Nova's inventory arithmetic for mdev parents (DESIGN.md §3, issue 2), as
 * pure functions so that they can be tested without a host.
 *
 * For each parent serving a type: total = existing mdevs of that type on it +
 * the type's available_instances; used = those existing mdevs. A type's
 * max_instances caps the host's total of that type: parents are taken in
 * sorted order, and a parent whose total would take the sum past the cap
 * reports total 0 (Nova 28+); a later, smaller parent may still fit.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef enum InventoryReason {
        INVENTORY_OK,
        INVENTORY_NO_TYPE,     /* no type configured for this parent */
        INVENTORY_NOT_OFFERED, /* the parent does not offer its configured type */
        INVENTORY_CAPPED,      /* counted as 0: it would take the type past max_instances */
        _INVENTORY_REASON_MAX,
} InventoryReason;

typedef struct InventoryParent {
        /* input */
        const char *parent;
        const char *type;         /* configured type, NULL: none */
        unsigned max_instances;   /* the type's cap, 0: none */
        bool offered;             /* the parent offers the type */
        unsigned existing;        /* mdevs of the type on the parent */
        unsigned available;       /* the type's available_instances */

        /* output */
        unsigned total;
        unsigned used;
        unsigned free;
        InventoryReason reason;
} InventoryParent;

/* Sorts the parents by name and fills in total, used, free and reason. */
void inventory_compute(InventoryParent *parents, size_t n);

/* Reads every registered parent (sysfs_parent_list()) with the type the
 * config gives it and that type's two numbers, and computes the inventory
 * (inventory_compute()): the code behind `inventory`, `metrics` and
 * `placement sync`. *ret owns the parent names; free with inventory_free(). */
struct Config;
int inventory_read(int rootfd, const struct Config *c, InventoryParent **ret, size_t *ret_n);
void inventory_free(InventoryParent *p, size_t n);

/* "ok", "no type configured", ... for text and JSON. */
const char *inventory_reason_to_string(InventoryReason r);

/* The node-device name libvirt gives a parent, which Nova puts after the host
 * name in a resource provider's name: "pci_0000_84_00_0" for a PCI address,
 * "css_0_0_0023" for a vfio-ccw subchannel, "ap_matrix" for vfio-ap; else the
 * name with every character other than [A-Za-z0-9] as '_'. Returns a new
 * string or NULL on allocation failure. */
char *inventory_nodedev_name(const char *parent);

/* "CUSTOM_MDEV_" + the type in upper case, other characters as '_'. */
char *inventory_type_trait(const char *type);
