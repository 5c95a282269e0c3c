/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The placement engine (place.c): the one order of every backend's
 * candidates, and max_instances by the inventory's rule. */
#include <stdio.h>

#include "check.h"
#include "macro.h"
#include "place.h"

static void test_pack_spread_ties(void) {
        PlaceKey full = { .parent = "b", .order = 1, .room = 1 };
        PlaceKey empty = { .parent = "a", .order = 0, .room = 16 };
        PlaceKey first_type = { .parent = "c", .order = 0, .room = 1 };
        PlaceKey same = { .parent = "a", .order = 0, .room = 1 };

        /* room decides before the type's order and the name */
        check(place_cmp(&full, &empty, CONFIG_PLACEMENT_PACK) < 0);
        check(place_cmp(&full, &empty, CONFIG_PLACEMENT_SPREAD) > 0);
        /* equal room: the guest's first type first, whatever the placement */
        check(place_cmp(&first_type, &full, CONFIG_PLACEMENT_PACK) < 0);
        check(place_cmp(&first_type, &full, CONFIG_PLACEMENT_SPREAD) < 0);
        /* then the name */
        check(place_cmp(&same, &first_type, CONFIG_PLACEMENT_PACK) < 0);
        check(place_cmp(&same, &same, CONFIG_PLACEMENT_SPREAD) == 0);
        check(place_cmp_ties(&empty, &full) < 0);
        check(place_cmp_ties(&first_type, &same) > 0);
}

/* Two GPUs of 16 and a cap of 20: Nova's arithmetic gives the first its 16
 * and the second none, whichever holds more now. */
static void test_over_max(void) {
        InventoryParent inv[] = {
                { .parent = "0000:c1:00.0", .type = "t", .max_instances = 20, .offered = true, .existing = 0, .available = 16 },
                { .parent = "0000:41:00.0", .type = "t", .max_instances = 20, .offered = true, .existing = 1, .available = 15 },
        };

        inventory_compute(inv, ELEMENTSOF(inv));
        check(!place_over_max(inv, ELEMENTSOF(inv), "0000:41:00.0"));
        check(place_over_max(inv, ELEMENTSOF(inv), "0000:c1:00.0"));
        check(!place_over_max(inv, ELEMENTSOF(inv), "0000:99:00.0")); /* not one of them */

        /* the cap reached by what exists: no parent may take one more */
        inv[0] = (InventoryParent) { .parent = "0000:41:00.0", .type = "t", .max_instances = 1, .offered = true,
                                     .existing = 1, .available = 15 };
        inventory_compute(inv, 1);
        check(place_over_max(inv, 1, "0000:41:00.0"));
}

int main(void) {
        test_pack_spread_ties();
        test_over_max();
        return 0;
}
