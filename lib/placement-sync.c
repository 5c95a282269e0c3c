/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fetch and cache for `placement sync` (placement-sync.h), and its rounds;
 * placement-sync-apply.c sends the plan's writes (placement-sync-internal.h). */
#include <fcntl.h>
#include <sys/stat.h>

#include "crash.h"
#include "placement-sync-internal.h"

/* json-c's json_object_object_foreach() is a GNU statement expression,
 * which clang's -Wpedantic flags (the fuzz build uses clang). */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wgnu-statement-expression"
#endif

/* --- JSON <-> model ---------------------------------------------------- */

json_object *sync_json_get(json_object *o, const char *key, json_type type) {
        json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
                return NULL;
        return v;
}

static bool get_uint(json_object *o, const char *key, unsigned *ret) {
        json_object *v = sync_json_get(o, key, json_type_int);
        int64_t i;

        if (!v)
                return false;
        i = json_object_get_int64(v);
        if (i < 0 || i > UINT32_MAX)
                return false;
        *ret = (unsigned) i;
        return true;
}

bool sync_json_get_generation(json_object *o, const char *key, int64_t *ret) {
        json_object *v = sync_json_get(o, key, json_type_int);

        if (!v)
                return false;
        *ret = json_object_get_int64(v);
        return true;
}

json_object *placement_inventory_to_json(const PlacementInventory *inv) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "allocation_ratio", json_object_new_double(inv->allocation_ratio));
        json_object_object_add(o, "max_unit", json_object_new_int64(inv->max_unit));
        json_object_object_add(o, "min_unit", json_object_new_int64(inv->min_unit));
        json_object_object_add(o, "reserved", json_object_new_int64(inv->reserved));
        json_object_object_add(o, "step_size", json_object_new_int64(inv->step_size));
        json_object_object_add(o, "total", json_object_new_int64(inv->total));
        return o;
}

json_object *inventories_to_json(const PlacementProvider *p) {
        json_object *o = json_object_new_object();

        for (size_t i = 0; i < p->n_inventories; i++)
                json_object_object_add(o, p->inventories[i].resource_class, placement_inventory_to_json(&p->inventories[i]));
        return o;
}

json_object *traits_to_json(const PlacementProvider *p) {
        json_object *a = json_object_new_array();

        for (char **t = p->traits; t && *t; t++)
                json_object_array_add(a, json_object_new_string(*t));
        return a;
}

/* {consumer: {"resources": {class: n}}}, GET /resource_providers/{u}/allocations' shape. */
static json_object *usages_to_json(const PlacementProvider *p) {
        json_object *o = json_object_new_object();

        for (size_t i = 0; i < p->n_usages; i++) {
                json_object *c = NULL, *res;

                if (!json_object_object_get_ex(o, p->usages[i].consumer, &c)) {
                        c = json_object_new_object();
                        json_object_object_add(c, "resources", json_object_new_object());
                        json_object_object_add(o, p->usages[i].consumer, c);
                }
                res = sync_json_get(c, "resources", json_type_object);
                json_object_object_add(res, p->usages[i].resource_class, json_object_new_int64(p->usages[i].used));
        }
        return o;
}

static int parse_inventories(json_object *inventories, PlacementProvider *p) {
        size_t n = (size_t) json_object_object_length(inventories), k = 0;

        p->inventories = calloc(n ? n : 1, sizeof *p->inventories);
        if (!p->inventories)
                return -ENOMEM;
        json_object_object_foreach(inventories, rc, v) {
                PlacementInventory *inv = &p->inventories[k];
                json_object *ratio = sync_json_get(v, "allocation_ratio", json_type_double);
                json_object *iratio = sync_json_get(v, "allocation_ratio", json_type_int);

                if (!json_object_is_type(v, json_type_object) || !get_uint(v, "total", &inv->total) ||
                    !get_uint(v, "reserved", &inv->reserved) || !get_uint(v, "min_unit", &inv->min_unit) ||
                    !get_uint(v, "max_unit", &inv->max_unit) || !get_uint(v, "step_size", &inv->step_size) ||
                    !(ratio || iratio))
                        return -EBADMSG;
                inv->allocation_ratio = ratio ? json_object_get_double(ratio) : (double) json_object_get_int64(iratio);
                inv->resource_class = strdup(rc);
                if (!inv->resource_class)
                        return -ENOMEM;
                p->n_inventories = ++k;
        }
        return 0;
}

static int parse_traits(json_object *traits, PlacementProvider *p) {
        size_t n = json_object_array_length(traits);

        for (size_t i = 0; i < n; i++) {
                json_object *t = json_object_array_get_idx(traits, i);

                if (!json_object_is_type(t, json_type_string))
                        return -EBADMSG;
                if (strv_extend(&p->traits, json_object_get_string(t)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int parse_usages(json_object *allocations, PlacementProvider *p) {
        json_object_object_foreach(allocations, consumer, v) {
                json_object *res = sync_json_get(v, "resources", json_type_object);

                if (!res || !uuid_is_valid(consumer))
                        return -EBADMSG;
                json_object_object_foreach(res, rc, n) {
                        PlacementUsage *u = realloc(p->usages, (p->n_usages + 1) * sizeof *u);
                        int64_t used;

                        if (!u)
                                return -ENOMEM;
                        p->usages = u;
                        if (!json_object_is_type(n, json_type_int) || (used = json_object_get_int64(n)) < 0 || used > UINT32_MAX)
                                return -EBADMSG;
                        u = &p->usages[p->n_usages];
                        *u = (PlacementUsage) { .used = (unsigned) used, .resource_class = strdup(rc) };
                        if (!u->resource_class)
                                return -ENOMEM;
                        uuid_normalize(consumer, u->consumer);
                        p->n_usages++;
                }
        }
        return 0;
}

/* name, uuid, parent_provider_uuid, generation: an entry of GET /resource_providers. */
static int parse_summary(json_object *o, PlacementProvider *p) {
        json_object *name = sync_json_get(o, "name", json_type_string), *uuid = sync_json_get(o, "uuid", json_type_string);
        json_object *parent = sync_json_get(o, "parent_provider_uuid", json_type_string);

        *p = (PlacementProvider) { .generation = -1 };
        if (!name || !uuid || !uuid_is_valid(json_object_get_string(uuid)) ||
            !sync_json_get_generation(o, "generation", &p->generation) ||
            (parent && !uuid_is_valid(json_object_get_string(parent))))
                return -EBADMSG;
        p->name = strdup(json_object_get_string(name));
        if (!p->name)
                return -ENOMEM;
        uuid_normalize(json_object_get_string(uuid), p->uuid);
        if (parent)
                uuid_normalize(json_object_get_string(parent), p->parent_uuid);
        return 0;
}

/* --- the cache --------------------------------------------------------- */

static char *cache_path(const char *host) {
        return strdup_printf(PLACEMENT_CACHE_DIR "/%s.json", host);
}

/* A cache that does not parse, or of another URL or host, is no cache. */
static void cache_load(int rootfd, const char *url, const char *host, Cache *ret) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        json_object *root = NULL, *providers;
        json_object *u, *h;

        *ret = (Cache) { 0 };
        if (rootfd < 0 || !name_is_valid(host))
                return;
        path = cache_path(host);
        if (!path)
                return;
        fd = openat(rootfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return;
        root = json_object_from_fd(fd);
        u = sync_json_get(root, "url", json_type_string);
        h = sync_json_get(root, "host", json_type_string);
        providers = sync_json_get(root, "providers", json_type_array);
        if (!u || !h || !providers || !streq(json_object_get_string(u), url) || !streq(json_object_get_string(h), host))
                goto out;
        for (size_t i = 0; i < json_object_array_length(providers); i++) {
                json_object *o = json_object_array_get_idx(providers, i), *x;
                PlacementProvider p;

                if (parse_summary(o, &p) < 0)
                        goto bad;
                if (((x = sync_json_get(o, "inventories", json_type_object)) && parse_inventories(x, &p) < 0) ||
                    ((x = sync_json_get(o, "traits", json_type_array)) && parse_traits(x, &p) < 0) ||
                    ((x = sync_json_get(o, "allocations", json_type_object)) && parse_usages(x, &p) < 0)) {
                        placement_provider_done(&p);
                        goto bad;
                }
                placement_provider_normalize(&p);
                if (placement_state_add(&ret->state, &p, NULL) < 0) {
                        placement_provider_done(&p);
                        goto bad;
                }
                placement_provider_done(&p);
        }
        goto out;
bad:
        placement_state_done(&ret->state);
out:
        json_object_put(root);
}

static json_object *provider_to_json(const PlacementProvider *p) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "uuid", json_object_new_string(p->uuid));
        json_object_object_add(o, "name", json_object_new_string(p->name));
        if (p->parent_uuid[0])
                json_object_object_add(o, "parent_provider_uuid", json_object_new_string(p->parent_uuid));
        json_object_object_add(o, "generation", json_object_new_int64(p->generation));
        json_object_object_add(o, "inventories", inventories_to_json(p));
        json_object_object_add(o, "traits", traits_to_json(p));
        json_object_object_add(o, "allocations", usages_to_json(p));
        return o;
}

/* Written to a temporary file and renamed: a reader sees the old cache or the new one. */
static int cache_save(int rootfd, const char *url, const char *host, const PlacementState *s) {
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        _cleanup_close_ int fd = -1;
        json_object *root, *a;
        const char *text;
        size_t len;
        int r = 0;

        if (rootfd < 0 || !name_is_valid(host))
                return 0;
        r = mkdir_p_at(rootfd, PLACEMENT_CACHE_DIR, 0755);
        if (r < 0)
                return error_set(r, "cannot create /" PLACEMENT_CACHE_DIR ": %s", strerror(-r));
        path = cache_path(host);
        tmp = strdup_printf(PLACEMENT_CACHE_DIR "/.%s.json.%d", host, (int) getpid());
        if (!path || !tmp)
                return -ENOMEM;
        root = json_object_new_object();
        a = json_object_new_array();
        json_object_object_add(root, "url", json_object_new_string(url));
        json_object_object_add(root, "host", json_object_new_string(host));
        json_object_object_add(root, "providers", a);
        for (size_t i = 0; i < s->n_providers; i++)
                if (s->providers[i].generation >= 0)
                        json_object_array_add(a, provider_to_json(&s->providers[i]));
        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text) {
                json_object_put(root);
                return -ENOMEM;
        }
        len = strlen(text);
        fd = openat(rootfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                r = -errno;
        else if (write(fd, text, len) != (ssize_t) len)
                r = -EIO;
        else if (renameat(rootfd, tmp, rootfd, path) < 0)
                r = -errno;
        json_object_put(root);
        if (r < 0) {
                if (fd >= 0)
                        unlinkat(rootfd, tmp, 0);
                return error_set(r, "cannot write /%s: %s", path, strerror(-r));
        }
        return 0;
}

/* --- fetch ------------------------------------------------------------- */

/* A request whose status is not one of the expected: a message with
 * Placement's own detail. */
int sync_unexpected(Sync *s, const char *method, const char *path, int status, json_object *body) {
        return error_set(-EIO, "Placement at %s answered %s %s with HTTP %d%s%s", placement_http_url(s->h), method, path,
                         status, *placement_http_error_detail(body) ? ": " : "", placement_http_error_detail(body));
}

/* GET path, expecting 200 and a JSON object. */
int sync_get_json(Sync *s, const char *path, json_object **ret) {
        json_object *body = NULL;
        int r = placement_http_request(s->h, "GET", path, NULL, &body);

        if (r < 0)
                return r;
        if (r != 200 || !json_object_is_type(body, json_type_object)) {
                r = sync_unexpected(s, "GET", path, r, body);
                json_object_put(body);
                return r;
        }
        *ret = body;
        return 0;
}

static int fetch_list(Sync *s, const char *query, json_object **ret_list, json_object **ret_body) {
        _cleanup_free_ char *path = strdup_printf("/resource_providers?%s", query);
        json_object *body = NULL, *list;
        int r;

        if (!path)
                return -ENOMEM;
        r = sync_get_json(s, path, &body);
        if (r < 0)
                return r;
        list = sync_json_get(body, "resource_providers", json_type_array);
        if (!list) {
                json_object_put(body);
                return error_set(-EBADMSG, "Placement at %s answered GET %s without resource_providers", placement_http_url(s->h), path);
        }
        *ret_list = list;
        *ret_body = body;
        return 0;
}

/* The three sub-resources of a provider the cache does not hold at its generation. */
static int fetch_details(Sync *s, PlacementProvider *p) {
        static const char * const what[] = { "inventories", "traits", "allocations" };

        for (size_t i = 0; i < ELEMENTSOF(what); i++) {
                _cleanup_free_ char *path = strdup_printf("/resource_providers/%s/%s", p->uuid, what[i]);
                json_object *body = NULL, *x;
                int64_t gen = -1;
                int r;

                if (!path)
                        return -ENOMEM;
                r = placement_http_request(s->h, "GET", path, NULL, &body);
                if (r == 404) {
                        /* deleted since the listing: a conflict, start again */
                        json_object_put(body);
                        return error_set(-EAGAIN, "provider %s went away while it was read", p->name);
                }
                if (r >= 0 && (r != 200 || !json_object_is_type(body, json_type_object)))
                        r = sync_unexpected(s, "GET", path, r, body);
                if (r < 0) {
                        json_object_put(body);
                        return r;
                }
                x = sync_json_get(body, what[i], i == 1 ? json_type_array : json_type_object);
                if (!x || !sync_json_get_generation(body, "resource_provider_generation", &gen))
                        r = error_set(-EBADMSG, "Placement at %s answered GET %s without %s", placement_http_url(s->h), path, what[i]);
                else if (i == 0)
                        r = parse_inventories(x, p);
                else if (i == 1)
                        r = parse_traits(x, p);
                else
                        r = parse_usages(x, p);
                json_object_put(body);
                if (r == -EBADMSG)
                        return error_set(r, "Placement at %s answered GET %s with a body mdev-hooks cannot read", placement_http_url(s->h), path);
                if (r < 0)
                        return r;
                /* Moved between the reads: not cached, and a write with it conflicts. */
                if (gen != p->generation)
                        p->generation = -1;
        }
        placement_provider_normalize(p);
        return 0;
}

static int cmp_root_first(const void *a, const void *b) {
        const PlacementProvider *x = a, *y = b;

        if (!x->parent_uuid[0] != !y->parent_uuid[0])
                return x->parent_uuid[0] ? 1 : -1;
        return strcmp(x->name, y->name);
}

/* What Placement holds in the tree of desired's root (found by UUID, else
 * by name): into s->fetched. */
static int fetch(Sync *s, const PlacementProvider *root) {
        _cleanup_free_ char *query = NULL;
        json_object *body = NULL, *list;
        int r;

        placement_state_done(&s->fetched);
        query = strdup_printf("in_tree=%s", root->uuid);
        if (!query)
                return -ENOMEM;
        r = fetch_list(s, query, &list, &body);
        if (r < 0)
                return r;
        if (json_object_array_length(list) == 0) {
                /* A root of our name under another UUID? */
                _cleanup_free_ char *esc = placement_http_escape(s->h, root->name);
                json_object *b2 = NULL, *l2;
                PlacementProvider p;

                free(query);
                query = esc ? strdup_printf("name=%s", esc) : NULL;
                if (!query) {
                        json_object_put(body);
                        return -ENOMEM;
                }
                r = fetch_list(s, query, &l2, &b2);
                if (r >= 0 && json_object_array_length(l2) > 0) {
                        r = parse_summary(json_object_array_get_idx(l2, 0), &p);
                        if (r >= 0) {
                                free(query);
                                query = p.parent_uuid[0] ? NULL : strdup_printf("in_tree=%s", p.uuid);
                                if (p.parent_uuid[0])
                                        r = error_set(-EEXIST, "Placement at %s has a provider '%s' (%s) that is not a root: mdev-hooks will not use it as the host's root; remove it or give --host",
                                                      placement_http_url(s->h), p.name, p.uuid);
                                else if (!query)
                                        r = -ENOMEM;
                                placement_provider_done(&p);
                                if (r >= 0) {
                                        json_object_put(body);
                                        body = NULL;
                                        r = fetch_list(s, query, &list, &body);
                                }
                        }
                }
                json_object_put(b2);
                if (r < 0) {
                        json_object_put(body);
                        return r;
                }
        }

        for (size_t i = 0; i < json_object_array_length(list); i++) {
                PlacementProvider p;
                const PlacementProvider *c;

                r = parse_summary(json_object_array_get_idx(list, i), &p);
                if (r < 0) {
                        json_object_put(body);
                        return error_set(r, "Placement at %s answered GET /resource_providers?%s with a provider mdev-hooks cannot read",
                                         placement_http_url(s->h), query);
                }
                c = placement_state_find_uuid(&s->cache.state, p.uuid);
                if (c && c->generation == p.generation && c->generation >= 0) {
                        placement_provider_done(&p);
                        r = placement_state_add(&s->fetched, c, NULL);
                } else {
                        r = fetch_details(s, &p);
                        if (r >= 0)
                                r = placement_state_add(&s->fetched, &p, NULL);
                        placement_provider_done(&p);
                }
                if (r < 0) {
                        json_object_put(body);
                        return r;
                }
        }
        json_object_put(body);
        if (s->fetched.n_providers > 1)
                qsort(s->fetched.providers, s->fetched.n_providers, sizeof *s->fetched.providers, cmp_root_first);
        return 0;
}

/* --- the rounds -------------------------------------------------------- */

int placement_sync(PlacementHttp *h, PlacementState *desired, const PlacementSyncOptions *o,
                   PlacementSyncResult *ret) {
        _cleanup_strv_free_ char **consumers = NULL;
        PlacementSyncResult result = { 0 };
        Sync s = { .h = h, .o = o, .host = desired->providers[0].name, .result = &result };
        int r = 0;

        if (desired->n_providers == 0)
                return -EINVAL;
        if (!o->no_cache)
                cache_load(o->rootfd, placement_http_url(h), s.host, &s.cache);

        for (result.rounds = 1; result.rounds <= PLACEMENT_SYNC_ROUNDS; result.rounds++) {
                _cleanup_(placement_plan_done) PlacementPlan plan = { 0 };
                _cleanup_(placement_state_done) PlacementState after = { 0 };

                r = fetch(&s, &desired->providers[0]);
                if (r == -EAGAIN) {
                        result.conflicts++;
                        continue;
                }
                if (r < 0)
                        break;
                PAUSEPOINT("placement-after-fetch");
                r = placement_plan(desired, &s.fetched, &plan);
                if (r < 0)
                        break;
                /* after: what Placement holds once this round's writes are done */
                for (size_t i = 0; i < s.fetched.n_providers && r >= 0; i++)
                        r = placement_state_add(&after, &s.fetched.providers[i], NULL);
                if (r < 0)
                        break;
                r = sync_apply(&s, &plan, desired, &after);
                if (r == -EAGAIN && !o->dry_run) {
                        /* Someone else wrote: what we hold of this tree is stale. */
                        result.conflicts++;
                        placement_state_done(&s.cache.state);
                        continue;
                }
                if (r < 0)
                        break;
                if (!o->dry_run && !o->no_cache) {
                        PlacementState keep = { 0 };

                        for (size_t i = 0; i < after.n_providers && r >= 0; i++)
                                if (after.providers[i].generation >= 0 && after.providers[i].name[0])
                                        r = placement_state_add(&keep, &after.providers[i], NULL);
                        if (r >= 0)
                                r = cache_save(o->rootfd, placement_http_url(h), s.host, &keep);
                        placement_state_done(&keep);
                        /* A cache that cannot be written costs reads next time, nothing else. */
                        r = 0;
                }
                break;
        }
        if (result.rounds > PLACEMENT_SYNC_ROUNDS)
                r = error_set(-EAGAIN, "Placement at %s: still conflicting after %u rounds (another writer keeps changing this host's providers); run the sync again",
                              placement_http_url(h), PLACEMENT_SYNC_ROUNDS);
        if (r >= 0) {
                memcpy(result.root_uuid, desired->providers[0].uuid, sizeof result.root_uuid);
                result.providers = (unsigned) desired->n_providers;
                for (size_t i = 0; i < desired->n_providers && r >= 0; i++)
                        for (size_t j = 0; j < desired->providers[i].n_usages && r >= 0; j++)
                                if (!strv_contains(consumers, desired->providers[i].usages[j].consumer))
                                        r = strv_extend(&consumers, desired->providers[i].usages[j].consumer);
                result.consumers = (unsigned) strv_length(consumers);
        }
        placement_state_done(&s.fetched);
        placement_state_done(&s.cache.state);
        if (r < 0) {
                placement_sync_result_done(&result);
                return r;
        }
        *ret = result;
        return 0;
}
