/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one placement engine (place.h). */
#include <string.h>

#include "pcidev.h"
#include "place.h"

bool place_near(int rootfd, NodeSet wish, const char *parent) {
        return wish != 0 && nodeset_has(wish, pci_device_numa_node(rootfd, parent));
}

int place_cmp_ties(const PlaceKey *a, const PlaceKey *b) {
        if (a->order != b->order)
                return a->order < b->order ? -1 : 1;
        return strcmp(a->parent, b->parent);
}

int place_cmp(const PlaceKey *a, const PlaceKey *b, ConfigPlacement placement) {
        if (a->near != b->near)
                return a->near ? -1 : 1;
        if (a->room != b->room) {
                if (placement == CONFIG_PLACEMENT_PACK)
                        return a->room < b->room ? -1 : 1;
                return a->room > b->room ? -1 : 1;
        }
        return place_cmp_ties(a, b);
}

bool place_over_max(InventoryParent *inv, size_t n, const char *parent) {
        const InventoryParent *ip = inventory_find(inv, n, parent);

        return ip && ip->free == 0;
}
