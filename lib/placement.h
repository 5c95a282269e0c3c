/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `placement sync` (doc/design.md §3): the host as OpenStack Placement
 * should see it, what Placement holds, and the plan that turns the one into
 * the other. Pure: no I/O here (placement-http.c talks HTTP,
 * placement-sync.c fetches, applies and caches), so the plan is unit-tested.
 *
 * The tree, as Nova's libvirt driver builds it for vGPUs:
 *   root      name = the host name, uuid = placement_uuid_for_name(name)
 *   children  name = "<host>_<libvirt node device of the parent>"
 *             (e.g. "myhost_pci_0000_84_00_0"), one per parent that serves a
 *             type, with an inventory of the type's mdev_class (Nova's
 *             arithmetic, inventory.c) and the trait CUSTOM_MDEV_<TYPE>;
 *             a parent that serves several types (a mixed-size or MIG
 *             GPU) has one per type instead, "<host>_<nodedev>_<type>".
 * Nova takes the root's UUID from its compute node and lets the children's
 * be random, then finds them again by name in the tree. mdev-hooks has no
 * compute node, so it derives every UUID from the provider's name (UUIDv5
 * in a namespace of its own) and also matches by name: a provider that
 * exists under the same name with another UUID (made by hand, or by an
 * older sync) is adopted, not duplicated.
 *
 * Usage: each guest that holds an mdev (record state `assigned`) is a
 * consumer, its UUID the guest's, with one unit of the class per mdev on
 * the parent's provider.
 *
 * A parent kind other than an mdev parent (the PF of NVIDIA's VFIO
 * framework) is added by filling PlacementParent from it: the tree and the
 * plan do not care where the numbers come from.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* The microversion every request asks for: consumer_type on allocations
 * (1.38, Placement 6.0 / Xena); Debian 12's placement 8.0 serves up to 1.39. */
#define PLACEMENT_MICROVERSION "1.38"
/* The project and user of the allocations mdev-hooks makes (Placement
 * requires both; there is no OpenStack project here), and their type. */
#define PLACEMENT_PROJECT_ID "mdev-hooks"
#define PLACEMENT_USER_ID "mdev-hooks"
#define PLACEMENT_CONSUMER_TYPE "INSTANCE"

/* One resource class on a provider: Nova's record for a vGPU inventory is
 * reserved 0, min_unit 1, max_unit total, step_size 1, allocation_ratio 1. */
typedef struct PlacementInventory {
        char *resource_class;
        unsigned total, reserved, min_unit, max_unit, step_size;
        double allocation_ratio;
} PlacementInventory;

/* One consumer's use of one class on one provider. */
typedef struct PlacementUsage {
        char consumer[UUID_STRING_MAX];
        char *resource_class;
        unsigned used;
} PlacementUsage;

typedef struct PlacementProvider {
        char *name;
        char uuid[UUID_STRING_MAX];
        char parent_uuid[UUID_STRING_MAX]; /* "" for the root */
        int64_t generation;                /* fetched: Placement's; desired: -1 */
        PlacementInventory *inventories;   /* sorted by class */
        size_t n_inventories;
        char **traits;                     /* sorted */
        PlacementUsage *usages;            /* allocations on it, sorted by consumer, class */
        size_t n_usages;
} PlacementProvider;

/* A tree of providers, the root first. */
typedef struct PlacementState {
        PlacementProvider *providers;
        size_t n_providers;
} PlacementState;

void placement_state_done(PlacementState *s);
void placement_provider_done(PlacementProvider *p);
/* Deep copy of one provider. */
int placement_provider_copy(const PlacementProvider *p, PlacementProvider *ret);
/* Appends a copy of p (taking nothing). Returns the new provider. */
int placement_state_add(PlacementState *s, const PlacementProvider *p, PlacementProvider **ret);
PlacementProvider *placement_state_find_uuid(const PlacementState *s, const char *uuid);
PlacementProvider *placement_state_find_name(const PlacementState *s, const char *name);
/* Sorts inventories, traits and usages, so that two states compare. */
void placement_provider_normalize(PlacementProvider *p);

/* The UUID mdev-hooks gives a provider of this name: UUIDv5 of the name in
 * the namespace 41ac9b5c-ee88-4db0-b55a-b434da73dc36. */
void placement_uuid_for_name(const char *name, char ret[UUID_STRING_MAX]);

/* --- the host as Placement should see it ------------------------------- */

/* A parent, as inventory.c counts it. total 0 (capped by max_instances) still
 * gets a provider, without inventory (the CLI gives none such: it lists the
 * parents that `inventory --placement` lists, as Nova deletes the provider
 * of a parent with no inventory left). */
typedef struct PlacementParent {
        const char *parent;         /* "0000:84:00.0", "mtty" */
        const char *nodedev;        /* libvirt's node-device name: "pci_0000_84_00_0", "mtty_mtty" (nodedev.h) */
        const char *type;           /* "nvidia-35" */
        const char *resource_class; /* the type's mdev_class */
        unsigned total;
        bool per_type;              /* one of a parent's several types: a provider of its own
                                     * (inventory_provider_name()) */
} PlacementParent;

/* A guest's mdev, from the record. */
typedef struct PlacementHolding {
        const char *guest_uuid;
        const char *parent;
        const char *type;           /* picks the provider of a parent with several types */
} PlacementHolding;


/* Builds the desired tree of host (root first, children sorted by name) and
 * its usages. A holding on a parent without inventory, or without a guest
 * UUID, is left out and counted in *ret_skipped (may be NULL). */
int placement_desired(const char *host, const PlacementParent *parents, size_t n_parents,
                      const PlacementHolding *holdings, size_t n_holdings,
                      PlacementState *ret, size_t *ret_skipped);

/* --- the plan ---------------------------------------------------------- */

typedef enum PlacementOpKind {
        PLACEMENT_OP_ENSURE_CLASS,     /* PUT /resource_classes/{name} */
        PLACEMENT_OP_ENSURE_TRAIT,     /* PUT /traits/{name} */
        PLACEMENT_OP_CREATE_PROVIDER,  /* POST /resource_providers */
        PLACEMENT_OP_SET_INVENTORIES,  /* PUT /resource_providers/{uuid}/inventories */
        PLACEMENT_OP_SET_TRAITS,       /* PUT /resource_providers/{uuid}/traits */
        PLACEMENT_OP_SET_ALLOCATIONS,  /* GET + PUT /allocations/{consumer} */
        PLACEMENT_OP_DELETE_PROVIDER,  /* DELETE /resource_providers/{uuid} */
        _PLACEMENT_OP_KIND_MAX,
} PlacementOpKind;

typedef struct PlacementOp {
        PlacementOpKind kind;
        /* ENSURE_*: the class or trait; SET_ALLOCATIONS: the consumer;
         * the provider ops: the provider's name. */
        const char *name;
        /* The provider ops: the provider's UUID (the fetched one where it
         * exists). */
        char uuid[UUID_STRING_MAX];
        /* SET_INVENTORIES, SET_TRAITS, CREATE: the desired provider.
         * DELETE: NULL. */
        const PlacementProvider *desired;
} PlacementOp;

typedef struct PlacementPlan {
        PlacementOp *ops;
        size_t n_ops;
} PlacementPlan;

void placement_plan_done(PlacementPlan *p);
const char *placement_op_kind_to_string(PlacementOpKind k);

/* The requests that make `fetched` (what Placement holds in the host's tree,
 * as fetched) into `desired`, in an order Placement accepts: classes and
 * traits, new providers (root first), inventories that are not emptied,
 * traits, allocations, inventories that are emptied, then providers that are
 * gone. Nothing when they agree. desired's UUIDs are first changed to those
 * of fetched providers of the same name (adoption), so that the requests
 * name what exists. The plan points into both states: keep them. */
int placement_plan(PlacementState *desired, const PlacementState *fetched, PlacementPlan *ret);

/* Whether a provider is one mdev-hooks manages: a child of the root (the
 * root itself is only created, never changed: on a host that Nova also
 * runs, it is Nova's compute node with its CPU and memory) that the desired
 * tree holds, or that mdev-hooks made (its UUID is placement_uuid_for_name()
 * of its name, or it carries a CUSTOM_MDEV_ trait). Other providers in the
 * tree, their inventories, traits and allocations are left alone. */
bool placement_provider_is_ours(const PlacementProvider *p);
bool placement_managed(const PlacementState *desired, const PlacementProvider *p);

/* The allocations of one consumer on the managed providers of a state
 * (placement_managed() against desired): every (provider, class, used),
 * sorted by provider UUID and class, into *ret (usages whose `consumer`
 * holds the provider's UUID instead). */
int placement_consumer_usages(const PlacementState *s, const PlacementState *desired, const char *consumer,
                              PlacementUsage **ret, size_t *ret_n);
void placement_usages_free(PlacementUsage *u, size_t n);
