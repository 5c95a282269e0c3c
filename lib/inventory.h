/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Nova's inventory arithmetic for mdev parents (doc/design.md §3), as
 * pure functions so that they can be tested without a host.
 *
 * For each parent serving a type: total = existing mdevs of that type on it +
 * the type's available_instances; used = those existing mdevs. A type's
 * max_instances caps the host's total of that type as Nova's
 * _get_gpu_inventories() does: the mdevs that exist on every parent of the
 * type are counted first; then, parents taken in sorted order, a parent gets
 * all of its available_instances if they fit under the cap, or none (capped;
 * a later, smaller parent may still fit). Unlike Nova, a capped parent keeps
 * the mdevs it holds in its total (Nova reports 0 and loses them from the
 * usages), so total >= used while the cap allows the mdevs that exist, and
 * the sum of the totals never passes the cap, whatever the order.
 *
 * The hook places by the same rule (alloc.c): a parent has room for a new
 * mdev only where this inventory shows it free capacity.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "enumtable.h"

typedef enum InventoryReason {
        INVENTORY_OK,
        INVENTORY_NO_TYPE,     /* no type configured for this parent */
        INVENTORY_NOT_OFFERED, /* the parent does not offer its configured type */
        INVENTORY_CAPPED,      /* no free capacity: its available_instances would take the type past max_instances */
        _INVENTORY_REASON_MAX,
        _INVENTORY_REASON_INVALID = -EINVAL,
} InventoryReason;

/* The most types one parent serves in an inventory (a mixed-size or MIG
 * GPU listed under several); more are left out. */
#define INVENTORY_TYPES_MAX 16

/* One row: a parent and one type it serves. A parent that serves several
 * types (a mixed-size or MIG GPU listed under several) has a row per type,
 * each counted on its own: how many of that type fit now, given what
 * exists. The rows of one GPU share its framebuffer or its GPU instances,
 * so their free counts are each true alone, not together. */
typedef struct InventoryParent {
        /* input */
        const char *parent;
        const char *type;         /* configured type, NULL: none */
        bool several;             /* the parent has a row for each of several types */
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

/* Sorts the rows by parent, then type, and fills in total, used, free and
 * reason. max_instances caps each type over its own rows. */
void inventory_compute(InventoryParent *parents, size_t n);
/* Sorts the rows by parent, then type (as inventory_compute() leaves them). */
void inventory_sort(InventoryParent *parents, size_t n);
/* A row of sorted rows by parent name (one of its rows), or NULL. */
InventoryParent *inventory_find(InventoryParent *parents, size_t n, const char *parent);

/* Reads every registered parent (sysfs_parent_list()) with each type the
 * config gives it (config_parent_types()) and that type's two numbers, and
 * computes the inventory
 * (inventory_compute()): the code behind `inventory`, `metrics` and
 * `placement sync`. *ret owns the parent names; free with inventory_free(). */
struct Config;
int inventory_read(int rootfd, const struct Config *c, InventoryParent **ret, size_t *ret_n);
void inventory_free(InventoryParent *p, size_t n);

/* "ok", "no type configured", ... for text and JSON. */
ENUM_DECL(inventory_reason, InventoryReason);

/* "CUSTOM_MDEV_" + the type in upper case, other characters as '_'. */
char *inventory_type_trait(const char *type);
/* A parent's resource provider's name: "<host>_<nodedev>", as Nova names a
 * parent's ("myhost_pci_0000_84_00_0"); for one of a parent's several types
 * (several, a mixed-size or MIG GPU), "<host>_<nodedev>_<type>": one
 * provider per (parent, type), since a provider has one inventory per
 * resource class and two types may share a class (VGPU). NULL: out of
 * memory. */
char *inventory_provider_name(const char *host, const char *nodedev, const char *type, bool several);
