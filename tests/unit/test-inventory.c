/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Nova's inventory arithmetic (inventory.c): one type on two parents, two
 * types, max_instances (existing mdevs first, the invariants over every small
 * host and every order of its parents), parents without a type
 * or whose type they do not offer; a GPU with a row per type; the traits
 * and provider names Nova gives them.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "inventory.h"
#include "util.h"

#define P(n_, t_, cap_, ex_, av_) \
        { .parent = (n_), .type = (t_), .max_instances = (cap_), .offered = true, \
          .existing = (ex_), .available = (av_) }

static void test_one_type_two_parents(void) {
        /* 15 available + 1 existing, and 7 + 1: totals 16 and 8, each with 1 used. */
        InventoryParent p[] = {
                P("0000:85:00.0", "nvidia-35", 0, 1, 7),
                P("0000:84:00.0", "nvidia-35", 0, 1, 15),
        };

        inventory_compute(p, ELEMENTSOF(p));
        check(streq(p[0].parent, "0000:84:00.0")); /* sorted */
        check(p[0].total == 16 && p[0].used == 1 && p[0].free == 15 && p[0].reason == INVENTORY_OK);
        check(p[1].total == 8 && p[1].used == 1 && p[1].free == 7 && p[1].reason == INVENTORY_OK);
}

static void test_two_types(void) {
        /* Each type's parents are counted on their own; a cap on one does not touch the other. */
        InventoryParent p[] = {
                P("0000:84:00.0", "nvidia-35", 16, 1, 15),
                P("0000:85:00.0", "nvidia-36", 0, 0, 16),
                P("0000:86:00.0", "nvidia-36", 0, 2, 6),
        };

        inventory_compute(p, ELEMENTSOF(p));
        check(p[0].total == 16 && p[0].used == 1 && p[0].reason == INVENTORY_OK);
        check(p[1].total == 16 && p[1].used == 0 && p[1].reason == INVENTORY_OK);
        check(p[2].total == 8 && p[2].used == 2 && p[2].free == 6 && p[2].reason == INVENTORY_OK);
}

static void test_max_instances_caps_second_parent(void) {
        /* max_instances = 16, each parent holds 1: 2 exist, 14 more fit. 15
         * more on the first would cross it (Nova's total 0 for it); the
         * second's 7 fit. The first keeps its mdev in its total. */
        InventoryParent p[] = {
                P("0000:85:00.0", "nvidia-35", 16, 1, 7),
                P("0000:84:00.0", "nvidia-35", 16, 1, 15),
        };

        inventory_compute(p, ELEMENTSOF(p));
        check(streq(p[0].parent, "0000:84:00.0"));
        check(p[0].total == 1 && p[0].used == 1 && p[0].free == 0 && p[0].reason == INVENTORY_CAPPED);
        check(p[1].total == 8 && p[1].used == 1 && p[1].free == 7 && p[1].reason == INVENTORY_OK);
}

static void test_max_instances_existing_count_first(void) {
        /* Nova's arithmetic: cap 16, the later parent holds 1. Counted in parent order,
         * the first took all 16 and the second showed 0 while holding 1. The
         * existing mdev counts first: 15 left, the first's 16 do not fit. */
        InventoryParent p[] = {
                P("0000:84:00.0", "nvidia-35", 16, 0, 16),
                P("0000:85:00.0", "nvidia-35", 16, 1, 15),
        };

        inventory_compute(p, ELEMENTSOF(p));
        check(p[0].total == 0 && p[0].free == 0 && p[0].reason == INVENTORY_CAPPED);
        check(p[1].total == 16 && p[1].used == 1 && p[1].free == 15 && p[1].reason == INVENTORY_OK);
}

static void test_max_instances_existing_over_cap(void) {
        /* The cap was lowered below what exists: the existing mdevs are counted
         * up to the cap in parent order, nothing is free, the sum stays 2. */
        InventoryParent p[] = {
                P("0000:84:00.0", "nvidia-35", 2, 2, 0),
                P("0000:85:00.0", "nvidia-35", 2, 1, 3),
        };

        inventory_compute(p, ELEMENTSOF(p));
        check(p[0].total == 2 && p[0].used == 2 && p[0].free == 0 && p[0].reason == INVENTORY_OK);
        check(p[1].total == 0 && p[1].used == 1 && p[1].free == 0 && p[1].reason == INVENTORY_CAPPED);
}

/* Every host of up to 4 parents of one type, each holding 0..3 and offering
 * 0..3 more, under caps 1, 2, 3, 5 and 7, and in several orders of the input: the sum
 * of the totals never passes the cap; a parent never shows fewer than it
 * holds while the existing mdevs fit under the cap; a parent has free
 * capacity only with all of its available_instances; and the result does
 * not depend on the order the parents came in. */
static void test_max_instances_invariants(void) {
        static const char * const names[] = { "0000:84:00.0", "0000:85:00.0", "0000:86:00.0", "0000:87:00.0" };
        unsigned cases = 0;

        for (unsigned n = 1; n <= 4; n++) {
                unsigned combos = 1;

                for (unsigned i = 0; i < n; i++)
                        combos *= 16;
                for (unsigned cap = 1; cap <= 8; cap += cap < 3 ? 1 : 2)
                        for (unsigned code = 0; code < combos; code++) {
                                InventoryParent ref[4], q[4];
                                unsigned existing = 0, sum = 0;

                                for (unsigned i = 0, c = code; i < n; i++, c /= 16) {
                                        ref[i] = (InventoryParent) P(names[i], "nvidia-35", cap, c % 4, (c / 4) % 4);
                                        existing += c % 4;
                                }
                                memcpy(q, ref, sizeof q);
                                inventory_compute(ref, n);
                                for (unsigned i = 0; i < n; i++) {
                                        sum += ref[i].total;
                                        check(ref[i].used == ref[i].existing);
                                        if (existing <= cap)
                                                check(ref[i].total >= ref[i].used);
                                        check(ref[i].free == 0 || ref[i].free == ref[i].available);
                                        check((ref[i].reason == INVENTORY_CAPPED) == (ref[i].total != ref[i].existing + ref[i].available));
                                }
                                check(sum <= cap);
                                /* reversed and rotated input: the same answer per parent */
                                for (unsigned rot = 0; rot < n; rot++) {
                                        InventoryParent r[4];

                                        for (unsigned i = 0; i < n; i++)
                                                r[i] = q[(n - 1 - i + rot) % n];
                                        inventory_compute(r, n);
                                        for (unsigned i = 0; i < n; i++)
                                                check(streq(r[i].parent, ref[i].parent) && r[i].total == ref[i].total &&
                                                      r[i].free == ref[i].free && r[i].reason == ref[i].reason);
                                }
                                cases++;
                        }
        }
        check(cases > 300000);
}

static void test_max_instances_later_parent_may_fit(void) {
        /* cap 20: 16 fits, 8 would make 24 and is zeroed, 4 makes 20 and fits. */
        InventoryParent p[] = {
                P("0000:84:00.0", "nvidia-35", 20, 0, 16),
                P("0000:85:00.0", "nvidia-35", 20, 0, 8),
                P("0000:86:00.0", "nvidia-35", 20, 0, 4),
                P("0000:87:00.0", "nvidia-35", 20, 0, 1),
        };

        inventory_compute(p, ELEMENTSOF(p));
        check(p[0].total == 16 && p[0].reason == INVENTORY_OK);
        check(p[1].total == 0 && p[1].reason == INVENTORY_CAPPED);
        check(p[2].total == 4 && p[2].reason == INVENTORY_OK);
        check(p[3].total == 0 && p[3].reason == INVENTORY_CAPPED);
}

static void test_sriov_vfs_capped(void) {
        /* 16 VFs with one instance each, max_instances 12: the last 4 report 0. */
        InventoryParent p[16];
        char names[16][16];

        for (unsigned i = 0; i < 16; i++) {
                snprintf(names[i], sizeof names[i], "0000:3b:%02x.%u", (4 + i) / 8, (4 + i) % 8);
                p[i] = (InventoryParent) P(names[i], "nvidia-472", 12, i < 2, i < 2 ? 0 : 1);
        }
        inventory_compute(p, ELEMENTSOF(p));
        for (unsigned i = 0; i < 16; i++) {
                check(p[i].total == (i < 12 ? 1u : 0u));
                check(p[i].reason == (i < 12 ? INVENTORY_OK : INVENTORY_CAPPED));
        }
        check(p[0].used == 1 && p[0].free == 0);
}

static void test_no_type_and_not_offered(void) {
        InventoryParent p[] = {
                { .parent = "mtty", .type = NULL, .existing = 3, .available = 5 },
                { .parent = "0000:84:00.0", .type = "nvidia-35", .max_instances = 4, .offered = false, .existing = 0, .available = 0 },
                P("0000:85:00.0", "nvidia-35", 4, 0, 4),
        };

        inventory_compute(p, ELEMENTSOF(p));
        check(streq(p[0].parent, "0000:84:00.0"));
        check(p[0].total == 0 && p[0].reason == INVENTORY_NOT_OFFERED);
        /* a parent that does not offer the type takes nothing from the cap */
        check(p[1].total == 4 && p[1].reason == INVENTORY_OK);
        check(streq(p[2].parent, "mtty"));
        check(p[2].total == 0 && p[2].used == 0 && p[2].reason == INVENTORY_NO_TYPE);
        check(streq(inventory_reason_to_string(INVENTORY_CAPPED), "over max_instances"));
}

static void test_a_gpu_with_two_types(void) {
        /* A mixed-size GPU under two types: a row for each, next to each
         * other and in type order, each counted alone; max_instances of one
         * type caps only its own rows (the 4Q's 14 would pass 10: none). */
        InventoryParent p[] = {
                P("0000:41:00.0", "nvidia-1202", 0, 1, 8),
                P("0000:84:00.0", "nvidia-1201", 10, 0, 6),
                P("0000:41:00.0", "nvidia-1201", 10, 0, 14),
        };

        inventory_compute(p, ELEMENTSOF(p));
        check(streq(p[0].parent, "0000:41:00.0") && streq(p[0].type, "nvidia-1201"));
        check(streq(p[1].parent, "0000:41:00.0") && streq(p[1].type, "nvidia-1202"));
        check(streq(p[2].parent, "0000:84:00.0"));
        check(p[0].total == 0 && p[0].reason == INVENTORY_CAPPED);
        check(p[1].total == 9 && p[1].used == 1 && p[1].free == 8 && p[1].reason == INVENTORY_OK);
        check(p[2].total == 6 && p[2].free == 6 && p[2].reason == INVENTORY_OK);
        check(inventory_find(p, ELEMENTSOF(p), "0000:84:00.0") == &p[2]);
        check(inventory_find(p, ELEMENTSOF(p), "0000:41:00.0") != NULL);
}

static void test_names(void) {
        char *s;

        s = inventory_type_trait("nvidia-35");
        check(streq(s, "CUSTOM_MDEV_NVIDIA_35"));
        free(s);
        s = inventory_type_trait("i915-GVTg_V5_4");
        check(streq(s, "CUSTOM_MDEV_I915_GVTG_V5_4"));
        free(s);
        s = inventory_type_trait("mtty-1");
        check(streq(s, "CUSTOM_MDEV_MTTY_1"));
        free(s);
        s = inventory_provider_name("myhost", "pci_0000_84_00_0", "nvidia-35", false);
        check(streq(s, "myhost_pci_0000_84_00_0"));
        free(s);
        s = inventory_provider_name("myhost", "pci_0000_41_00_0", "nvidia-1201", true);
        check(streq(s, "myhost_pci_0000_41_00_0_nvidia-1201"));
        free(s);
}

int main(void) {
        test_one_type_two_parents();
        test_two_types();
        test_max_instances_caps_second_parent();
        test_max_instances_existing_count_first();
        test_max_instances_existing_over_cap();
        test_max_instances_invariants();
        test_max_instances_later_parent_may_fit();
        test_sriov_vfs_capped();
        test_no_type_and_not_offered();
        test_a_gpu_with_two_types();
        test_names();
        return 0;
}
