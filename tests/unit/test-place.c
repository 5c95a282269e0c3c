/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The placement engine (place.c): the one order of every backend's
 * candidates, and max_instances by the inventory's rule. */
#include <errno.h>
#include <stdio.h>

#include "check.h"
#include "fixture.h"
#include "macro.h"
#include "pcidev.h"
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

/* A candidate on a node the guest wishes goes before every other, whatever
 * its room and the placement; between two near ones (or without a wish)
 * the order is the one above. */
static void test_near(void) {
        PlaceKey near_full = { .parent = "b", .order = 1, .room = 1, .near = true };
        PlaceKey far_empty = { .parent = "a", .order = 0, .room = 16 };
        PlaceKey far_full = { .parent = "a", .order = 0, .room = 1 };
        PlaceKey near_empty = { .parent = "c", .order = 0, .room = 16, .near = true };

        check(place_cmp(&near_full, &far_empty, CONFIG_PLACEMENT_SPREAD) < 0);
        check(place_cmp(&near_full, &far_full, CONFIG_PLACEMENT_PACK) < 0);
        check(place_cmp(&far_empty, &near_full, CONFIG_PLACEMENT_PACK) > 0);
        /* both near: room, as without a wish */
        check(place_cmp(&near_full, &near_empty, CONFIG_PLACEMENT_PACK) < 0);
        check(place_cmp(&near_full, &near_empty, CONFIG_PLACEMENT_SPREAD) > 0);
        /* the ties are not about nodes */
        check(place_cmp_ties(&far_empty, &near_full) < 0);
        /* no wish: nothing is near, nothing is read (no root to read from) */
        check(!place_near(-1, 0, "0000:41:00.0"));
}

/* A parent's node is its PCI device's numa_node; a device showing -1, one
 * without the file, and a parent that is no PCI device (mtty) have none. */
static void test_numa_node(void) {
        char dir[] = "/tmp/test-place-XXXXXX";
        int rootfd;

        check(mkdtemp(dir) != NULL);
        rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        check(rootfd >= 0);
        fixture_file(rootfd, "sys/bus/pci/devices/0000:41:00.0/numa_node", "0\n");
        fixture_file(rootfd, "sys/bus/pci/devices/0000:c1:00.0/numa_node", "1\n");
        fixture_file(rootfd, "sys/bus/pci/devices/0000:84:00.0/numa_node", "-1\n");
        fixture_file(rootfd, "sys/bus/pci/devices/0000:85:00.0/vendor", "0x10de\n");
        check(pci_device_numa_node(rootfd, "0000:41:00.0") == 0);
        check(pci_device_numa_node(rootfd, "0000:C1:00.0") == 1);
        check(pci_device_numa_node(rootfd, "0000:84:00.0") == -1);
        check(pci_device_numa_node(rootfd, "0000:85:00.0") == -1);
        check(pci_device_numa_node(rootfd, "mtty") == -1);
        check(place_near(rootfd, 0x2, "0000:c1:00.0"));
        check(!place_near(rootfd, 0x2, "0000:41:00.0"));
        check(place_near(rootfd, 0x3, "0000:41:00.0"));
        check(!place_near(rootfd, 0x2, "0000:84:00.0"));
        check(!place_near(rootfd, 0x1, "mtty"));
        check(!place_near(rootfd, 0, "0000:c1:00.0")); /* no wish */
        close(rootfd);
        tmpdir_remove(dir);
}

/* The nodeset of <numatune><memory nodeset=>: libvirt's list. */
static void test_nodeset(void) {
        NodeSet s = 0;

        check(nodeset_parse("1", &s) == 0 && s == 0x2);
        check(nodeset_parse("0-3,^2", &s) == 0 && s == 0xb);
        check(nodeset_parse(" 1 , 3 ", &s) == 0 && s == 0xa);
        check(nodeset_parse("^1,1", &s) == 0 && s == 0); /* taken out wherever it stands */
        check(nodeset_parse("70", &s) == 0 && s == 0);   /* beyond NODESET_MAX: left out */
        check(nodeset_parse("62-70", &s) == 0 && s == (NodeSet) 3 << 62);
        check(nodeset_has(s, 63) && !nodeset_has(s, 64) && !nodeset_has(s, -1));
        s = 7;
        check(nodeset_parse("", &s) == -EINVAL && s == 7);
        check(nodeset_parse("1,", &s) == -EINVAL);
        check(nodeset_parse("3-1", &s) == -EINVAL);
        check(nodeset_parse("a", &s) == -EINVAL);
        check(nodeset_parse("-1", &s) == -EINVAL);
        check(nodeset_parse("1-^2", &s) == -EINVAL && s == 7);
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
        test_near();
        test_nodeset();
        test_numa_node();
        test_over_max();
        return 0;
}
