/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one placement engine: where a new device of a guest goes, for every
 * backend (backend.h). A backend reads its candidates (alloc.c's for
 * mdevs: a parent and a type; vgpu-place.c's for VF kinds: a PF and a
 * type) and places them by these rules only:
 *
 *   - near first (place_cmp()): when the guest's memory is pinned to NUMA
 *     nodes (its <numatune>, a NodeSet: the wish), a candidate whose
 *     parent is on one of them (place_near(): the parent's PCI numa_node)
 *     goes before every one that is not, whatever their room. A
 *     preference, never a refusal: with no room near, the others are
 *     tried in the order below. No wish: every candidate is as near as
 *     any other, and nothing is read;
 *   - the order (place_cmp()): `placement = pack` puts the candidate with
 *     the least room first (fill a GPU before the next: the others stay
 *     whole for a big type), `spread` the most room first; ties by the
 *     type's place in the guest's list (the first type it names first),
 *     then by the parent's name. Room is the backend's: an mdev parent's
 *     available_instances, a PF's unprogrammed VFs;
 *   - max_instances (place_over_max()): a candidate of a capped type has
 *     room only where the type's inventory (inventory.h, Nova's arithmetic,
 *     over every parent of the type with the devices that exist or this call
 *     plans counted as made) shows it free capacity, so the hook never
 *     places where `mdev-hooks inventory` says there is none;
 *   - a pinned parent (an entry's parent=, attach's --parent) limits the
 *     candidates to it before they are ordered.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "inventory.h"
#include "nodeset.h"

typedef struct PlaceKey {
        const char *parent;
        unsigned order; /* of the candidate's type in the guest's list */
        unsigned room;  /* how many more of the type it can take now (for VFs: an upper bound) */
        bool near;      /* on a node the guest wishes (place_near()); false without a wish */
} PlaceKey;

/* Whether parent (a PCI address: an mdev parent, a PF) is on one of the
 * nodes of wish: false without a wish (0) and then nothing is read, else
 * one read of its numa_node (pcidev.h; a parent that is no PCI device, or
 * that has no node, is near none). */
bool place_near(int rootfd, NodeSet wish, const char *parent);

/* <0, 0, >0 as a goes before, with, after b. */
int place_cmp(const PlaceKey *a, const PlaceKey *b, ConfigPlacement placement);
/* The ties of place_cmp() alone: by type order, then parent name. */
int place_cmp_ties(const PlaceKey *a, const PlaceKey *b);

/* max_instances: whether parent, one of the n parents of a capped type in
 * inv (each as read: offered, available, with the devices that exist or
 * are planned on it in existing; computed by inventory_compute()), has no
 * free capacity left. false when parent is not one of them. */
bool place_over_max(InventoryParent *inv, size_t n, const char *parent);
