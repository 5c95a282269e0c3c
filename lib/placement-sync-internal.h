/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * placement-sync.c's inside, shared by the files it is split into (as
 * kmod's libkmod-internal.h): placement-sync.c (JSON and the model, the
 * cache, fetch, the rounds) and placement-sync-apply.c (the plan's writes).
 * Nothing outside them includes it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "placement-sync.h"

typedef struct Cache {
        PlacementState state;   /* providers with their generation */
} Cache;

typedef struct Sync {
        PlacementHttp *h;
        const PlacementSyncOptions *o;
        const char *host;
        Cache cache;
        PlacementState fetched;
        PlacementSyncResult *result;
} Sync;

json_object *sync_json_get(json_object *o, const char *key, json_type type);
bool sync_json_get_generation(json_object *o, const char *key, int64_t *ret);
json_object *inventories_to_json(const PlacementProvider *p);
json_object *traits_to_json(const PlacementProvider *p);
int sync_unexpected(Sync *s, const char *method, const char *path, int status, json_object *body);
int sync_get_json(Sync *s, const char *path, json_object **ret);
int sync_apply(Sync *s, const PlacementPlan *plan, const PlacementState *desired, PlacementState *after);
