/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fetch, apply and cache for `placement sync` (placement-sync.h). */
#include <fcntl.h>
#include <sys/stat.h>

#include "crash.h"
#include "placement-sync.h"

/* json-c's json_object_object_foreach() is a GNU statement expression,
 * which clang's -Wpedantic flags (the fuzz build uses clang). */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wgnu-statement-expression"
#endif

/* --- JSON <-> model ---------------------------------------------------- */

static json_object *get(json_object *o, const char *key, json_type type) {
        json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
                return NULL;
        return v;
}

static bool get_uint(json_object *o, const char *key, unsigned *ret) {
        json_object *v = get(o, key, json_type_int);
        int64_t i;

        if (!v)
                return false;
        i = json_object_get_int64(v);
        if (i < 0 || i > UINT32_MAX)
                return false;
        *ret = (unsigned) i;
        return true;
}

static bool get_generation(json_object *o, const char *key, int64_t *ret) {
        json_object *v = get(o, key, json_type_int);

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

static json_object *inventories_to_json(const PlacementProvider *p) {
        json_object *o = json_object_new_object();

        for (size_t i = 0; i < p->n_inventories; i++)
                json_object_object_add(o, p->inventories[i].resource_class, placement_inventory_to_json(&p->inventories[i]));
        return o;
}

static json_object *traits_to_json(const PlacementProvider *p) {
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
                res = get(c, "resources", json_type_object);
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
                json_object *ratio = get(v, "allocation_ratio", json_type_double);
                json_object *iratio = get(v, "allocation_ratio", json_type_int);

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
                json_object *res = get(v, "resources", json_type_object);

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
        json_object *name = get(o, "name", json_type_string), *uuid = get(o, "uuid", json_type_string);
        json_object *parent = get(o, "parent_provider_uuid", json_type_string);

        *p = (PlacementProvider) { .generation = -1 };
        if (!name || !uuid || !uuid_is_valid(json_object_get_string(uuid)) ||
            !get_generation(o, "generation", &p->generation) ||
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

typedef struct Cache {
        PlacementState state;   /* providers with their generation */
} Cache;

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
        u = get(root, "url", json_type_string);
        h = get(root, "host", json_type_string);
        providers = get(root, "providers", json_type_array);
        if (!u || !h || !providers || !streq(json_object_get_string(u), url) || !streq(json_object_get_string(h), host))
                goto out;
        for (size_t i = 0; i < json_object_array_length(providers); i++) {
                json_object *o = json_object_array_get_idx(providers, i), *x;
                PlacementProvider p;

                if (parse_summary(o, &p) < 0)
                        goto bad;
                if (((x = get(o, "inventories", json_type_object)) && parse_inventories(x, &p) < 0) ||
                    ((x = get(o, "traits", json_type_array)) && parse_traits(x, &p) < 0) ||
                    ((x = get(o, "allocations", json_type_object)) && parse_usages(x, &p) < 0)) {
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

typedef struct Sync {
        PlacementHttp *h;
        const PlacementSyncOptions *o;
        const char *host;
        Cache cache;
        PlacementState fetched;
        PlacementSyncResult *result;
} Sync;

/* A request whose status is not one of the expected: a message with
 * Placement's own detail. */
static int unexpected(Sync *s, const char *method, const char *path, int status, json_object *body) {
        return error_set(-EIO, "Placement at %s answered %s %s with HTTP %d%s%s", placement_http_url(s->h), method, path,
                         status, *placement_http_error_detail(body) ? ": " : "", placement_http_error_detail(body));
}

/* GET path, expecting 200 and a JSON object. */
static int get_json(Sync *s, const char *path, json_object **ret) {
        json_object *body = NULL;
        int r = placement_http_request(s->h, "GET", path, NULL, &body);

        if (r < 0)
                return r;
        if (r != 200 || !json_object_is_type(body, json_type_object)) {
                r = unexpected(s, "GET", path, r, body);
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
        r = get_json(s, path, &body);
        if (r < 0)
                return r;
        list = get(body, "resource_providers", json_type_array);
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
                        r = unexpected(s, "GET", path, r, body);
                if (r < 0) {
                        json_object_put(body);
                        return r;
                }
                x = get(body, what[i], i == 1 ? json_type_array : json_type_object);
                if (!x || !get_generation(body, "resource_provider_generation", &gen))
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

/* --- apply ------------------------------------------------------------- */

void placement_sync_result_done(PlacementSyncResult *r) {
        for (size_t i = 0; i < r->n_changes; i++) {
                free(r->changes[i].path);
                free(r->changes[i].body);
                free(r->changes[i].what);
        }
        free(r->changes);
        *r = (PlacementSyncResult) { 0 };
}

static int record_change(Sync *s, const char *method, const char *path, json_object *body, const char *what) {
        PlacementChange *c = realloc(s->result->changes, (s->result->n_changes + 1) * sizeof *c);
        const char *text = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;

        if (!c)
                return -ENOMEM;
        s->result->changes = c;
        c = &c[s->result->n_changes];
        *c = (PlacementChange) { .method = method, .path = strdup(path), .body = text ? strdup(text) : NULL, .what = strdup(what) };
        if (!c->path || !c->what || (text && !c->body)) {
                free(c->path);
                free(c->body);
                free(c->what);
                return -ENOMEM;
        }
        s->result->n_changes++;
        return 0;
}

/* A generation this round lost track of (an allocation moved it): read it. */
static int refresh_generation(Sync *s, PlacementProvider *p) {
        _cleanup_free_ char *path = strdup_printf("/resource_providers/%s", p->uuid);
        json_object *body = NULL;
        int r;

        if (!path)
                return -ENOMEM;
        if (s->o->dry_run) {
                p->generation = 0;
                return 0;
        }
        r = get_json(s, path, &body);
        if (r < 0)
                return r;
        if (!get_generation(body, "generation", &p->generation))
                r = error_set(-EBADMSG, "Placement at %s answered GET %s without a generation", placement_http_url(s->h), path);
        json_object_put(body);
        return r;
}

/* Sends one write (or in a dry run records it). Returns the status, with
 * 409 as -EAGAIN and a message. */
static int send_write(Sync *s, const char *method, const char *path, json_object *body, const char *what,
                      json_object **ret_body) {
        json_object *answer = NULL;
        int r;

        r = record_change(s, method, path, body, what);
        if (r < 0 || s->o->dry_run)
                return r < 0 ? r : 200;
        PAUSEPOINT("placement-write");
        r = placement_http_request(s->h, method, path, body, &answer);
        if (r == 409) {
                const char *code = placement_http_error_code(answer);

                r = error_set(-EAGAIN, "Placement at %s refused %s %s (409 %s): %s", placement_http_url(s->h), method, path,
                              *code ? code : "conflict", placement_http_error_detail(answer));
                json_object_put(answer);
                return r;
        }
        if (ret_body)
                *ret_body = answer;
        else
                json_object_put(answer);
        return r;
}

static int apply_ensure(Sync *s, const PlacementOp *op) {
        bool trait = op->kind == PLACEMENT_OP_ENSURE_TRAIT;
        _cleanup_free_ char *path = strdup_printf("/%s/%s", trait ? "traits" : "resource_classes", op->name);
        _cleanup_free_ char *what = strdup_printf("%s %s", trait ? "trait" : "resource class", op->name);
        int r;

        if (!path || !what)
                return -ENOMEM;
        r = send_write(s, "PUT", path, NULL, what, NULL);
        if (r >= 0 && r != 200 && r != 201 && r != 204)
                r = unexpected(s, "PUT", path, r, NULL);
        return r < 0 ? r : 0;
}

static int apply_create(Sync *s, const PlacementOp *op, PlacementState *after) {
        const PlacementProvider *d = op->desired;
        _cleanup_free_ char *what = strdup_printf("create provider %s", d->name);
        json_object *body = json_object_new_object(), *answer = NULL;
        PlacementProvider *p;
        int64_t gen = 0;
        int r;

        if (!what)
                return -ENOMEM;
        json_object_object_add(body, "name", json_object_new_string(d->name));
        json_object_object_add(body, "uuid", json_object_new_string(d->uuid));
        if (d->parent_uuid[0])
                json_object_object_add(body, "parent_provider_uuid", json_object_new_string(d->parent_uuid));
        r = send_write(s, "POST", "/resource_providers", body, what, &answer);
        json_object_put(body);
        if (r >= 0 && r != 200 && r != 201)
                r = unexpected(s, "POST", "/resource_providers", r, answer);
        if (r >= 0 && !s->o->dry_run && !get_generation(answer, "generation", &gen))
                gen = -1;
        json_object_put(answer);
        if (r < 0)
                return r;
        /* A new provider: nothing on it yet. */
        r = placement_state_add(after, &(PlacementProvider) { .name = d->name, .generation = gen }, &p);
        if (r < 0)
                return r;
        memcpy(p->uuid, d->uuid, sizeof p->uuid);
        memcpy(p->parent_uuid, d->parent_uuid, sizeof p->parent_uuid);
        return 0;
}

static int apply_provider_put(Sync *s, const PlacementOp *op, PlacementState *after) {
        bool inv = op->kind == PLACEMENT_OP_SET_INVENTORIES;
        const PlacementProvider *d = op->desired;
        PlacementProvider *p = placement_state_find_uuid(after, d->uuid);
        _cleanup_free_ char *path = strdup_printf("/resource_providers/%s/%s", d->uuid, inv ? "inventories" : "traits");
        _cleanup_free_ char *what = strdup_printf("%s of %s", inv ? "inventories" : "traits", d->name);
        json_object *body, *answer = NULL;
        int64_t gen = -1;
        int r;

        if (!path || !what)
                return -ENOMEM;
        if (!p)
                return error_set(-EAGAIN, "provider %s is not known in this round", d->name);
        if (p->generation < 0) {
                r = refresh_generation(s, p);
                if (r < 0)
                        return r;
        }
        body = json_object_new_object();
        json_object_object_add(body, inv ? "inventories" : "traits", inv ? inventories_to_json(d) : traits_to_json(d));
        json_object_object_add(body, "resource_provider_generation", json_object_new_int64(p->generation));
        r = send_write(s, "PUT", path, body, what, &answer);
        json_object_put(body);
        if (r >= 0 && r != 200)
                r = unexpected(s, "PUT", path, r, answer);
        if (r >= 0 && !s->o->dry_run && !get_generation(answer, "resource_provider_generation", &gen))
                gen = -1;
        json_object_put(answer);
        if (r < 0)
                return r;
        p->generation = s->o->dry_run ? p->generation + 1 : gen;
        /* What it holds now is what was written. */
        if (inv) {
                for (size_t i = 0; i < p->n_inventories; i++)
                        free(p->inventories[i].resource_class);
                free(p->inventories);
                p->inventories = NULL;
                p->n_inventories = 0;
                if (d->n_inventories > 0) {
                        p->inventories = calloc(d->n_inventories, sizeof *p->inventories);
                        if (!p->inventories)
                                return -ENOMEM;
                        for (; p->n_inventories < d->n_inventories; p->n_inventories++) {
                                p->inventories[p->n_inventories] = d->inventories[p->n_inventories];
                                p->inventories[p->n_inventories].resource_class = strdup(d->inventories[p->n_inventories].resource_class);
                                if (!p->inventories[p->n_inventories].resource_class)
                                        return -ENOMEM;
                        }
                }
        } else {
                strv_free(p->traits);
                p->traits = NULL;
                for (char **t = d->traits; t && *t; t++)
                        if (strv_extend(&p->traits, *t) < 0)
                                return -ENOMEM;
        }
        return 0;
}

/* Replaces the consumer's usages on the providers of `after` with desired's,
 * and forgets the generation of every provider whose allocations moved (a
 * PUT /allocations answers 204 without them). */
static int track_allocations(PlacementState *after, const PlacementState *desired, const char *consumer, bool dry_run) {
        for (size_t i = 0; i < after->n_providers; i++) {
                PlacementProvider *p = &after->providers[i];
                const PlacementProvider *d = placement_state_find_uuid(desired, p->uuid);
                bool moved = false;
                size_t k = 0;

                if (!placement_managed(desired, p))
                        continue; /* the consumer's allocation there was kept */
                for (size_t j = 0; j < p->n_usages; j++) {
                        if (streq(p->usages[j].consumer, consumer)) {
                                free(p->usages[j].resource_class);
                                moved = true;
                                continue;
                        }
                        p->usages[k++] = p->usages[j];
                }
                p->n_usages = k;
                for (size_t j = 0; d && j < d->n_usages; j++) {
                        PlacementUsage *u;

                        if (!streq(d->usages[j].consumer, consumer))
                                continue;
                        u = realloc(p->usages, (p->n_usages + 1) * sizeof *u);
                        if (!u)
                                return -ENOMEM;
                        p->usages = u;
                        p->usages[p->n_usages] = d->usages[j];
                        p->usages[p->n_usages].resource_class = strdup(d->usages[j].resource_class);
                        if (!p->usages[p->n_usages].resource_class)
                                return -ENOMEM;
                        p->n_usages++;
                        moved = true;
                }
                if (moved) {
                        placement_provider_normalize(p);
                        p->generation = dry_run ? p->generation + 1 : -1;
                }
        }
        return 0;
}

static int apply_allocations(Sync *s, const PlacementOp *op, const PlacementState *desired, PlacementState *after) {
        _cleanup_free_ char *path = strdup_printf("/allocations/%s", op->name);
        _cleanup_free_ char *what = strdup_printf("allocations of guest %s", op->name);
        json_object *current = NULL, *allocs, *body, *mine, *x;
        PlacementUsage *want = NULL;
        size_t n_want = 0;
        int r;

        if (!path || !what)
                return -ENOMEM;
        if (!s->o->dry_run) {
                r = get_json(s, path, &current);
                if (r < 0)
                        return r;
                PAUSEPOINT("placement-allocations-read");
        }
        r = placement_consumer_usages(desired, desired, op->name, &want, &n_want);
        if (r < 0) {
                json_object_put(current);
                return r;
        }

        body = json_object_new_object();
        allocs = json_object_new_object();
        json_object_object_add(body, "allocations", allocs);
        /* The consumer's allocations outside this host's tree stay. */
        x = get(current, "allocations", json_type_object);
        if (x) {
                json_object_object_foreach(x, rp, v) {
                        json_object *res = get(v, "resources", json_type_object), *keep;

                        const PlacementProvider *p = placement_state_find_uuid(&s->fetched, rp);

                        if (!p)
                                p = placement_state_find_uuid(after, rp);
                        if (!p)
                                p = placement_state_find_uuid(desired, rp);
                        if (!res || (p && placement_managed(desired, p)))
                                continue;
                        keep = json_object_new_object();
                        json_object_object_add(keep, "resources", json_object_get(res));
                        json_object_object_add(allocs, rp, keep);
                }
        }
        for (size_t i = 0; i < n_want; i++) {
                json_object *res;

                if (!json_object_object_get_ex(allocs, want[i].consumer, &mine)) {
                        mine = json_object_new_object();
                        json_object_object_add(mine, "resources", json_object_new_object());
                        json_object_object_add(allocs, want[i].consumer, mine);
                }
                res = get(mine, "resources", json_type_object);
                json_object_object_add(res, want[i].resource_class, json_object_new_int64(want[i].used));
        }
        placement_usages_free(want, n_want);
        if ((x = get(current, "consumer_generation", json_type_int)))
                json_object_object_add(body, "consumer_generation", json_object_new_int64(json_object_get_int64(x)));
        else
                json_object_object_add(body, "consumer_generation", NULL);
        x = get(current, "project_id", json_type_string);
        json_object_object_add(body, "project_id", json_object_new_string(x ? json_object_get_string(x) : PLACEMENT_PROJECT_ID));
        x = get(current, "user_id", json_type_string);
        json_object_object_add(body, "user_id", json_object_new_string(x ? json_object_get_string(x) : PLACEMENT_USER_ID));
        x = get(current, "consumer_type", json_type_string);
        json_object_object_add(body, "consumer_type", json_object_new_string(x ? json_object_get_string(x) : PLACEMENT_CONSUMER_TYPE));
        json_object_put(current);

        r = send_write(s, "PUT", path, body, what, NULL);
        json_object_put(body);
        if (r >= 0 && r != 200 && r != 204)
                r = unexpected(s, "PUT", path, r, NULL);
        if (r < 0)
                return r;
        return track_allocations(after, desired, op->name, s->o->dry_run);
}

static int apply_delete(Sync *s, const PlacementOp *op, PlacementState *after) {
        _cleanup_free_ char *path = strdup_printf("/resource_providers/%s", op->uuid);
        _cleanup_free_ char *what = strdup_printf("delete provider %s", op->name);
        PlacementProvider *p;
        int r;

        if (!path || !what)
                return -ENOMEM;
        r = send_write(s, "DELETE", path, NULL, what, NULL);
        if (r >= 0 && r != 204 && r != 200 && r != 404)
                r = unexpected(s, "DELETE", path, r, NULL);
        if (r < 0)
                return r;
        p = placement_state_find_uuid(after, op->uuid);
        if (p) {
                /* gone: never cached */
                p->generation = -1;
                p->name[0] = '\0';
        }
        return 0;
}

static int apply(Sync *s, const PlacementPlan *plan, const PlacementState *desired, PlacementState *after) {
        for (size_t i = 0; i < plan->n_ops; i++) {
                const PlacementOp *op = &plan->ops[i];
                int r;

                switch (op->kind) {
                case PLACEMENT_OP_ENSURE_CLASS:
                case PLACEMENT_OP_ENSURE_TRAIT:
                        r = apply_ensure(s, op);
                        break;
                case PLACEMENT_OP_CREATE_PROVIDER:
                        r = apply_create(s, op, after);
                        break;
                case PLACEMENT_OP_SET_INVENTORIES:
                case PLACEMENT_OP_SET_TRAITS:
                        r = apply_provider_put(s, op, after);
                        break;
                case PLACEMENT_OP_SET_ALLOCATIONS:
                        r = apply_allocations(s, op, desired, after);
                        break;
                case PLACEMENT_OP_DELETE_PROVIDER:
                        r = apply_delete(s, op, after);
                        break;
                default:
                        r = -EINVAL;
                }
                if (r < 0)
                        return r;
        }
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
                r = apply(&s, &plan, desired, &after);
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
