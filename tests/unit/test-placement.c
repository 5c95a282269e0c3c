/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The plan of `placement sync` (placement.c): the desired tree of a host,
 * and what it takes to get there from what Placement holds: everything from
 * nothing, nothing from the same, one inventory, one trait, a guest moved,
 * a parent gone, a provider adopted by name, the order Placement needs, and
 * a provider per type of a GPU listed under several.
 */
#include <stdio.h>

#include "check.h"
#include "placement.h"
#include "util.h"

#define G1 "11111111-1111-4111-8111-111111111111"
#define G2 "22222222-2222-4222-8222-222222222222"

static const PlacementParent parents[] = {
        { .parent = "0000:85:00.0", .nodedev = "pci_0000_85_00_0", .type = "nvidia-35", .resource_class = "VGPU", .total = 16 },
        { .parent = "0000:84:00.0", .nodedev = "pci_0000_84_00_0", .type = "nvidia-35", .resource_class = "VGPU", .total = 16 },
        { .parent = "0000:86:00.0", .nodedev = "pci_0000_86_00_0", .type = "nvidia-36", .resource_class = "CUSTOM_NVIDIA_36", .total = 0 },
};

static void desired(const PlacementHolding *h, size_t n_h, PlacementState *ret) {
        size_t skipped = 99;

        check(placement_desired("myhost", parents, ELEMENTSOF(parents), h, n_h, ret, &skipped) == 0);
        check(skipped == 0 || n_h > 0);
}

/* What Placement would hold after the plan: the desired state with generations. */
static void as_fetched(const PlacementState *d, PlacementState *ret) {
        *ret = (PlacementState) { 0 };
        for (size_t i = 0; i < d->n_providers; i++) {
                PlacementProvider *p;

                check(placement_state_add(ret, &d->providers[i], &p) == 0);
                p->generation = 3;
        }
}

static size_t count(const PlacementPlan *p, PlacementOpKind k) {
        size_t n = 0;

        for (size_t i = 0; i < p->n_ops; i++)
                n += p->ops[i].kind == k;
        return n;
}

static size_t first(const PlacementPlan *p, PlacementOpKind k) {
        for (size_t i = 0; i < p->n_ops; i++)
                if (p->ops[i].kind == k)
                        return i;
        return SIZE_MAX;
}

static void test_names_uuids_inventories(void) {
        PlacementState d;
        char u[UUID_STRING_MAX];

        desired(NULL, 0, &d);
        check(d.n_providers == 4);
        check(streq(d.providers[0].name, "myhost") && !d.providers[0].parent_uuid[0]);
        check(streq(d.providers[1].name, "myhost_pci_0000_84_00_0")); /* sorted */
        check(streq(d.providers[2].name, "myhost_pci_0000_85_00_0"));
        check(streq(d.providers[3].name, "myhost_pci_0000_86_00_0"));
        for (size_t i = 1; i < 4; i++)
                check(streq(d.providers[i].parent_uuid, d.providers[0].uuid));
        /* UUIDv5 of the name: stable across runs and hosts, distinct per name */
        placement_uuid_for_name("myhost_pci_0000_84_00_0", u);
        check(streq(u, d.providers[1].uuid) && uuid_is_valid(u) && u[14] == '5');
        check(!streq(d.providers[1].uuid, d.providers[2].uuid));
        /* Nova's record; a capped parent has a provider without inventory */
        check(d.providers[1].n_inventories == 1);
        check(streq(d.providers[1].inventories[0].resource_class, "VGPU"));
        check(d.providers[1].inventories[0].total == 16 && d.providers[1].inventories[0].max_unit == 16);
        check(d.providers[1].inventories[0].min_unit == 1 && d.providers[1].inventories[0].step_size == 1);
        check(d.providers[1].inventories[0].reserved == 0 && d.providers[1].inventories[0].allocation_ratio == 1.0);
        check(d.providers[3].n_inventories == 0);
        check(strv_length(d.providers[3].traits) == 1 && streq(d.providers[3].traits[0], "CUSTOM_MDEV_NVIDIA_36"));
        placement_state_done(&d);
}

static void test_everything_from_nothing(void) {
        PlacementState d, f = { 0 };
        PlacementPlan p;

        desired(NULL, 0, &d);
        check(placement_plan(&d, &f, &p) == 0);
        check(count(&p, PLACEMENT_OP_CREATE_PROVIDER) == 4);
        check(count(&p, PLACEMENT_OP_SET_INVENTORIES) == 2);  /* not the capped one */
        check(count(&p, PLACEMENT_OP_SET_TRAITS) == 3);
        check(count(&p, PLACEMENT_OP_ENSURE_TRAIT) == 2);
        check(count(&p, PLACEMENT_OP_ENSURE_CLASS) == 0);     /* VGPU is standard; 36's class has no inventory */
        check(count(&p, PLACEMENT_OP_SET_ALLOCATIONS) == 0 && count(&p, PLACEMENT_OP_DELETE_PROVIDER) == 0);
        /* order: traits exist before they are set; the root before its children */
        check(first(&p, PLACEMENT_OP_ENSURE_TRAIT) < first(&p, PLACEMENT_OP_SET_TRAITS));
        check(first(&p, PLACEMENT_OP_CREATE_PROVIDER) < first(&p, PLACEMENT_OP_SET_INVENTORIES));
        check(streq(p.ops[first(&p, PLACEMENT_OP_CREATE_PROVIDER)].name, "myhost"));
        placement_plan_done(&p);
        placement_state_done(&d);
}

static void test_nothing_from_the_same(void) {
        PlacementHolding h[] = { { .guest_uuid = G1, .parent = "0000:84:00.0" } };
        PlacementState d, f;
        PlacementPlan p;

        desired(h, ELEMENTSOF(h), &d);
        as_fetched(&d, &f);
        check(placement_plan(&d, &f, &p) == 0);
        check(p.n_ops == 0);
        placement_plan_done(&p);
        placement_state_done(&f);
        placement_state_done(&d);
}

static void test_one_inventory_one_trait(void) {
        PlacementState d, f;
        PlacementPlan p;

        desired(NULL, 0, &d);
        as_fetched(&d, &f);
        f.providers[2].inventories[0].total = 8;                /* 85 */
        free(f.providers[1].traits[0]);                        /* 84 */
        f.providers[1].traits[0] = strdup("CUSTOM_OTHER");
        check(placement_plan(&d, &f, &p) == 0);
        check(p.n_ops == 3);
        check(p.ops[0].kind == PLACEMENT_OP_ENSURE_TRAIT && streq(p.ops[0].name, "CUSTOM_MDEV_NVIDIA_35"));
        check(p.ops[1].kind == PLACEMENT_OP_SET_INVENTORIES && streq(p.ops[1].uuid, d.providers[2].uuid));
        check(p.ops[2].kind == PLACEMENT_OP_SET_TRAITS && streq(p.ops[2].uuid, d.providers[1].uuid));
        placement_plan_done(&p);
        placement_state_done(&f);
        placement_state_done(&d);
}

static void test_guest_moves_and_parent_gone(void) {
        PlacementHolding before[] = {
                { .guest_uuid = G1, .parent = "0000:84:00.0" },
                { .guest_uuid = G2, .parent = "0000:85:00.0" },
        };
        PlacementHolding after[] = {
                { .guest_uuid = G1, .parent = "0000:85:00.0" },   /* moved */
                { .guest_uuid = G2, .parent = "0000:85:00.0" },   /* unchanged */
                { .guest_uuid = NULL, .parent = "0000:85:00.0" }, /* no guest UUID: left out */
                { .guest_uuid = G2, .parent = "0000:86:00.0" },   /* no inventory there: left out */
        };
        PlacementState d0, d, f;
        PlacementPlan p;
        PlacementProvider extra = { .name = (char *) "myhost_pci_0000_99_00_0", .generation = 1 };
        size_t skipped = 0;

        desired(before, ELEMENTSOF(before), &d0);
        as_fetched(&d0, &f);
        /* a provider of a parent that is gone */
        placement_uuid_for_name(extra.name, extra.uuid);
        memcpy(extra.parent_uuid, f.providers[0].uuid, sizeof extra.parent_uuid);
        check(placement_state_add(&f, &extra, NULL) == 0);

        check(placement_desired("myhost", parents, ELEMENTSOF(parents), after, ELEMENTSOF(after), &d, &skipped) == 0);
        check(skipped == 2);
        check(placement_plan(&d, &f, &p) == 0);
        check(p.n_ops == 2);
        check(p.ops[0].kind == PLACEMENT_OP_SET_ALLOCATIONS && streq(p.ops[0].name, G1));
        check(p.ops[1].kind == PLACEMENT_OP_DELETE_PROVIDER && streq(p.ops[1].name, "myhost_pci_0000_99_00_0"));
        placement_plan_done(&p);
        placement_state_done(&f);
        placement_state_done(&d);
        placement_state_done(&d0);
}

static void test_guest_gone_before_inventory_emptied(void) {
        PlacementHolding h[] = { { .guest_uuid = G1, .parent = "0000:84:00.0" } };
        PlacementParent capped[ELEMENTSOF(parents)];
        PlacementState d0, d, f;
        PlacementPlan p;

        desired(h, ELEMENTSOF(h), &d0);
        as_fetched(&d0, &f);
        /* 84 is now capped to 0 and the guest has stopped */
        memcpy(capped, parents, sizeof capped);
        capped[1].total = 0;
        check(placement_desired("myhost", capped, ELEMENTSOF(capped), NULL, 0, &d, NULL) == 0);
        check(placement_plan(&d, &f, &p) == 0);
        check(p.n_ops == 2);
        check(p.ops[0].kind == PLACEMENT_OP_SET_ALLOCATIONS);
        check(p.ops[1].kind == PLACEMENT_OP_SET_INVENTORIES && p.ops[1].desired->n_inventories == 0);
        placement_plan_done(&p);
        placement_state_done(&f);
        placement_state_done(&d);
        placement_state_done(&d0);
}

static void test_adopts_by_name(void) {
        PlacementState d, f;
        PlacementPlan p;
        const char *other_root = "99999999-9999-4999-8999-999999999999";

        desired(NULL, 0, &d);
        as_fetched(&d, &f);
        /* the root exists under another UUID (made by hand, or by Nova) */
        memcpy(f.providers[0].uuid, other_root, UUID_STRING_MAX);
        for (size_t i = 1; i < f.n_providers; i++)
                memcpy(f.providers[i].parent_uuid, other_root, UUID_STRING_MAX);
        check(placement_plan(&d, &f, &p) == 0);
        check(p.n_ops == 0);
        check(streq(d.providers[0].uuid, other_root));
        check(streq(d.providers[1].parent_uuid, other_root));
        placement_plan_done(&p);
        placement_state_done(&f);
        placement_state_done(&d);
}

static void test_custom_class_ensured(void) {
        PlacementParent pp[] = { { .parent = "mtty", .nodedev = "mtty_mtty", .type = "mtty-1", .resource_class = "CUSTOM_MTTY", .total = 2 } };
        PlacementState d, f = { 0 };
        PlacementPlan p;

        check(placement_desired("h", pp, 1, NULL, 0, &d, NULL) == 0);
        check(streq(d.providers[1].name, "h_mtty_mtty"));
        check(placement_plan(&d, &f, &p) == 0);
        check(p.ops[0].kind == PLACEMENT_OP_ENSURE_CLASS && streq(p.ops[0].name, "CUSTOM_MTTY"));
        check(p.ops[1].kind == PLACEMENT_OP_ENSURE_TRAIT && streq(p.ops[1].name, "CUSTOM_MDEV_MTTY_1"));
        placement_plan_done(&p);
        placement_state_done(&d);
}

/* A host that Nova runs too: its compute node is the root, with CPU and
 * memory, an instance's allocation on it, and a child of Nova's own. */
static void test_leaves_nova_alone(void) {
        PlacementHolding h[] = { { .guest_uuid = G1, .parent = "0000:84:00.0" } };
        PlacementState d, f;
        PlacementPlan p;
        PlacementProvider *root, *nova_child;
        PlacementProvider child = { .name = (char *) "myhost_0000:81:00.0", .generation = 2,
                                    .uuid = "abababab-abab-4bab-8bab-abababababab" };
        PlacementInventory vcpu = { .resource_class = (char *) "VCPU", .total = 64, .max_unit = 64, .min_unit = 1,
                                    .step_size = 1, .allocation_ratio = 16.0 };
        PlacementUsage nova_use = { .consumer = G2, .resource_class = (char *) "VCPU", .used = 4 };

        desired(h, ELEMENTSOF(h), &d);
        as_fetched(&d, &f);
        root = &f.providers[0];
        memcpy(root->uuid, "12345678-1234-4234-8234-123456789abc", UUID_STRING_MAX);
        for (size_t i = 1; i < f.n_providers; i++)
                memcpy(f.providers[i].parent_uuid, root->uuid, UUID_STRING_MAX);
        root->inventories = calloc(1, sizeof *root->inventories);
        root->inventories[0] = vcpu;
        root->inventories[0].resource_class = strdup("VCPU");
        root->n_inventories = 1;
        check(strv_extend(&root->traits, "COMPUTE_STATUS_ENABLED") == 0);
        root->usages = calloc(1, sizeof *root->usages);
        root->usages[0] = nova_use;
        root->usages[0].resource_class = strdup("VCPU");
        root->n_usages = 1;
        memcpy(child.parent_uuid, root->uuid, UUID_STRING_MAX);
        check(placement_state_add(&f, &child, &nova_child) == 0);
        root = &f.providers[0]; /* the add may have moved the array */
        nova_child->usages = calloc(1, sizeof *nova_child->usages);
        nova_child->usages[0] = (PlacementUsage) { .consumer = G2, .resource_class = strdup("CUSTOM_PCI_10DE_1EB8"), .used = 1 };
        nova_child->n_usages = 1;

        check(!placement_provider_is_ours(nova_child));
        check(!placement_managed(&d, &f.providers[0]));
        check(placement_plan(&d, &f, &p) == 0);
        check(p.n_ops == 0); /* root kept, child kept, Nova's instance kept */
        check(streq(d.providers[1].parent_uuid, root->uuid)); /* ours nest under Nova's node */
        placement_plan_done(&p);

        /* a child that mdev-hooks made (its UUIDv5) and no longer wants is removed */
        child.name = (char *) "myhost_pci_0000_99_00_0";
        placement_uuid_for_name(child.name, child.uuid);
        check(placement_state_add(&f, &child, NULL) == 0);
        check(placement_plan(&d, &f, &p) == 0);
        check(p.n_ops == 1 && p.ops[0].kind == PLACEMENT_OP_DELETE_PROVIDER && streq(p.ops[0].name, child.name));
        placement_plan_done(&p);
        placement_state_done(&f);
        placement_state_done(&d);
}

/* A mixed-size GPU listed under two types of one class: a provider per
 * type, each with its own inventory and trait, and a guest's vGPU counted
 * on the provider of its type. */
static void test_a_provider_per_type_of_a_gpu(void) {
        static const PlacementParent gpu[] = {
                { .parent = "0000:41:00.0", .nodedev = "pci_0000_41_00_0", .type = "nvidia-1201",
                  .resource_class = "VGPU", .total = 14, .per_type = true },
                { .parent = "0000:41:00.0", .nodedev = "pci_0000_41_00_0", .type = "nvidia-1202",
                  .resource_class = "VGPU", .total = 9, .per_type = true },
        };
        PlacementHolding h[] = {
                { .guest_uuid = G1, .parent = "0000:41:00.0", .type = "nvidia-1202" },
                { .guest_uuid = G2, .parent = "0000:41:00.0", .type = "nvidia-1201" },
                { .guest_uuid = G2, .parent = "0000:41:00.0", .type = "nvidia-1203" }, /* not served: left out */
        };
        PlacementState d;
        size_t skipped = 0;

        check(placement_desired("myhost", gpu, ELEMENTSOF(gpu), h, ELEMENTSOF(h), &d, &skipped) == 0);
        check(skipped == 1);
        check(d.n_providers == 3);
        check(streq(d.providers[1].name, "myhost_pci_0000_41_00_0_nvidia-1201"));
        check(streq(d.providers[2].name, "myhost_pci_0000_41_00_0_nvidia-1202"));
        check(d.providers[1].n_inventories == 1 && d.providers[1].inventories[0].total == 14);
        check(d.providers[2].n_inventories == 1 && d.providers[2].inventories[0].total == 9);
        check(streq(d.providers[1].traits[0], "CUSTOM_MDEV_NVIDIA_1201") && !d.providers[1].traits[1]);
        check(streq(d.providers[2].traits[0], "CUSTOM_MDEV_NVIDIA_1202") && !d.providers[2].traits[1]);
        check(d.providers[1].n_usages == 1 && streq(d.providers[1].usages[0].consumer, G2));
        check(d.providers[2].n_usages == 1 && streq(d.providers[2].usages[0].consumer, G1));
        placement_state_done(&d);
}

int main(void) {
        test_names_uuids_inventories();
        test_everything_from_nothing();
        test_nothing_from_the_same();
        test_one_inventory_one_trait();
        test_guest_moves_and_parent_gone();
        test_guest_gone_before_inventory_emptied();
        test_adopts_by_name();
        test_custom_class_ensured();
        test_leaves_nova_alone();
        test_a_provider_per_type_of_a_gpu();
        return 0;
}
