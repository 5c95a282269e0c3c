/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `placement sync` against a live Placement (placement.h has the model and
 * the plan): fetch the host's tree, plan, apply, in rounds.
 *
 * Fetch: GET /resource_providers?in_tree=<root> (the root found by its
 * UUID, else by its name), then each provider's inventories, traits and
 * allocations, unless the cache holds that provider at the same generation.
 * Placement bumps a provider's generation on every change to its
 * inventories, traits or allocations, so a provider whose generation did
 * not move is as the cache says: a sync with nothing changed sends one GET.
 * The cache lives in /run/mdev-hooks/placement/<host>.json (gone at a
 * reboot, then the first sync reads everything), is written only after a
 * sync that succeeded and never on a dry run.
 *
 * Apply: the plan's requests, each with the generation Placement last
 * gave. A 409 (another writer moved a generation, or made a provider of the
 * same name) ends the round: the next round re-reads what changed and
 * plans again, up to PLACEMENT_SYNC_ROUNDS rounds. Any other failure stops
 * the sync; what was done stays done, and the next sync completes it.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "placement.h"
#include "placement-http.h"

#define PLACEMENT_SYNC_ROUNDS 5
#define PLACEMENT_CACHE_DIR "run/mdev-hooks/placement" /* under the root */

typedef struct PlacementSyncOptions {
        int rootfd;       /* for the cache; -1: no cache */
        bool dry_run;     /* read, plan, print: send no write */
        bool no_cache;    /* neither read nor write the cache */
} PlacementSyncOptions;

/* A request sent, or in a dry run one that would be. */
typedef struct PlacementChange {
        const char *method;
        char *path;
        char *body;       /* compact JSON, or NULL */
        char *what;       /* "create provider host_pci_0000_84_00_0" */
} PlacementChange;

typedef struct PlacementSyncResult {
        char root_uuid[UUID_STRING_MAX];
        unsigned rounds;
        unsigned conflicts;          /* 409s that made a round start again */
        unsigned providers;          /* in the desired tree */
        unsigned consumers;          /* guests with allocations in it */
        PlacementChange *changes;    /* in the order sent */
        size_t n_changes;
} PlacementSyncResult;

void placement_sync_result_done(PlacementSyncResult *r);

/* Makes Placement hold `desired` (from placement_desired()). Returns 0, or
 * -errno with a message (error_set()). */
int placement_sync(PlacementHttp *h, PlacementState *desired, const PlacementSyncOptions *o,
                   PlacementSyncResult *ret);

/* json for one inventory, Placement's shape (also `inventory --placement`). */
json_object *placement_inventory_to_json(const PlacementInventory *inv);
