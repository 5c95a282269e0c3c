/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks placement sync`: publish this host's parents, their inventories
 * and traits, and its guests' allocations to an OpenStack Placement service
 * (lib/placement*.c). Reads the host as `inventory` does and the record as
 * `list` does; changes nothing on the host but its cache of what Placement
 * holds (/run/mdev-hooks/placement/).
 */
#include <fcntl.h>
#include <limits.h>

#include "cli.h"
#include "inventory.h"
#include "ledger.h"
#include "log.h"
#include "placement-sync.h"
#include "sysfs.h"

#define PLACEMENT_TIMEOUT 30 /* seconds for one request */

static const char help[] =
        "Usage: mdev-hooks placement sync [--url URL] [--token TOKEN] [--host NAME]\n"
        "                                 [--dry-run] [--json] [--config FILE]\n"
        "\n"
        "Publishes this host to OpenStack Placement (microversion " PLACEMENT_MICROVERSION "), as\n"
        "Nova's libvirt driver does: a root resource provider named after the host,\n"
        "one child per mdev parent named <host>_<libvirt node device> (e.g.\n"
        "myhost_pci_0000_84_00_0) with an inventory of the type's mdev_class (Nova's\n"
        "arithmetic, as 'inventory' counts it) and the trait CUSTOM_MDEV_<TYPE>\n"
        "(a GPU listed under several types: one child per type, named\n"
        "<host>_<libvirt node device>_<type>, each with what fits of its type), and\n"
        "each running guest's mdevs as an allocation whose consumer is the guest's\n"
        "UUID. Providers and allocations that are gone are removed. A second run\n"
        "with nothing changed sends no write.\n"
        "\n"
        "  --url URL       Placement's endpoint (default: [placement] url)\n"
        "  --token TOKEN   sent as X-Auth-Token (default: the contents of\n"
        "                  [placement] token_file, which other users cannot\n"
        "                  read in the process list; none without either)\n"
        "  --host NAME     the root provider's name (default: this node's name)\n"
        "  --dry-run       read Placement and print the writes, send none\n"
        "  --json          print {\"changes\": [...], ...} as JSON\n"
        "  --config FILE   read FILE instead of /etc/mdev-hooks/mdev-hooks.conf\n"
        "  --help          show this help\n"
        "\n"
        "Exit status: 0 done, 1 failed (Placement unreachable, refused, ...; run\n"
        "it again to complete a partial sync), 2 bad usage or bad config.\n";

typedef struct Options {
        CliOptions cli; /* --config, --json */
        const char *url;
        const char *token;
        const char *host;
        bool dry_run;
} Options;

/* "placement sync [OPTIONS]": argv[0] is "placement", argv[1] the action. */
static int parse_options(int argc, char *argv[], Options *o) {
        const CliOption own[] = {
                { "url", &o->url, NULL },
                { "token", &o->token, NULL },
                { "host", &o->host, NULL },
                { "dry-run", NULL, &o->dry_run },
                { NULL, NULL, NULL },
        };

        if (argc < 2 || argv[1][0] == '-') {
                if (argc >= 2 && (streq(argv[1], "--help") || streq(argv[1], "--version")))
                        return cli_parse_options(2, argv, 0, help, &o->cli);
                log_error("placement: missing action; see 'mdev-hooks placement --help'");
                return CLI_EXIT_USAGE;
        }
        if (!streq(argv[1], "sync")) {
                log_error("placement: unknown action '%s' (known: sync); see 'mdev-hooks placement --help'", argv[1]);
                return CLI_EXIT_USAGE;
        }
        /* the action's options follow it; messages name "placement sync" */
        argv[1] = (char *) "placement sync";
        return cli_parse_options_own(argc - 1, argv + 1, CLI_OPT_JSON, own, help, &o->cli);
}

/* The token file is a secret: read under the root, one line. */
static int read_token(int rootfd, const char *path, char **ret) {
        _cleanup_free_ char *token = NULL;
        int r;

        r = read_line_at(rootfd, path + 1, &token);
        if (r < 0)
                return error_set(r, "cannot read the token file '%s' ([placement] token_file): %s", path, strerror(-r));
        if (!*token || strpbrk(token, "\r\n"))
                return error_set(-EINVAL, "the token file '%s' ([placement] token_file) must hold the token on one line", path);
        *ret = steal_pointer(&token);
        return 0;
}

/* Every guest's mdev that the record says is assigned. */
static int read_holdings(int rootfd, LedgerEntry **ret_entries, PlacementHolding **ret, size_t *ret_n) {
        _cleanup_close_ int dirfd = -1;
        _cleanup_free_ LedgerEntry *e = NULL;
        PlacementHolding *h;
        size_t n = 0, k = 0;
        int r;

        r = ledger_open_existing(rootfd, &dirfd);
        if (r == -ENOENT) {
                *ret_entries = NULL;
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (r >= 0)
                r = ledger_list(dirfd, &e, &n, NULL);
        if (r < 0)
                return r;
        h = calloc(n + 1, sizeof *h);
        if (!h)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (e[i].state == LEDGER_ASSIGNED && e[i].guest_uuid[0])
                        h[k++] = (PlacementHolding) { .guest_uuid = e[i].guest_uuid, .parent = e[i].parent,
                                                      .type = e[i].type };
        *ret_entries = steal_pointer(&e);
        *ret = h;
        *ret_n = k;
        return 0;
}

static int print_result(const Options *o, const char *url, const char *host, const PlacementSyncResult *res,
                        const PlacementHttp *h) {
        if (o->cli.json) {
                _cleanup_json_ json_object *root = json_object_new_object();
                json_object *changes = json_object_new_array(), *req = json_object_new_object();

                for (size_t i = 0; i < res->n_changes; i++) {
                        json_object *c = json_object_new_object();

                        json_object_object_add(c, "method", json_object_new_string(res->changes[i].method));
                        json_object_object_add(c, "path", json_object_new_string(res->changes[i].path));
                        if (res->changes[i].body)
                                json_object_object_add(c, "body", json_tokener_parse(res->changes[i].body));
                        json_object_object_add(c, "what", json_object_new_string(res->changes[i].what));
                        json_object_array_add(changes, c);
                }
                json_object_object_add(root, "changes", changes);
                json_object_object_add(root, "conflicts", json_object_new_int64(res->conflicts));
                json_object_object_add(root, "consumers", json_object_new_int64(res->consumers));
                json_object_object_add(root, "dry_run", json_object_new_boolean(o->dry_run));
                json_object_object_add(root, "host", json_object_new_string(host));
                json_object_object_add(root, "microversion", json_object_new_string(PLACEMENT_MICROVERSION));
                json_object_object_add(root, "providers", json_object_new_int64(res->providers));
                json_object_object_add(req, "total", json_object_new_int64(placement_http_requests(h)));
                json_object_object_add(req, "writes", json_object_new_int64(placement_http_writes(h)));
                json_object_object_add(root, "requests", req);
                json_object_object_add(root, "root_provider", json_object_new_string(res->root_uuid));
                json_object_object_add(root, "rounds", json_object_new_int64(res->rounds));
                json_object_object_add(root, "url", json_object_new_string(url));
                return cli_print_json(root);
        }
        for (size_t i = 0; i < res->n_changes; i++)
                printf("%s%s %s%s%s\n", o->dry_run ? "would send: " : "", res->changes[i].method, res->changes[i].path,
                       res->changes[i].body ? " " : "", strempty(res->changes[i].body));
        printf("%s: %u providers, %u guests with allocations: %s (%u requests, %u writes%s)\n", host, res->providers,
               res->consumers,
               res->n_changes == 0 ? "up to date" : o->dry_run ? "not in sync (dry run)" : "synced",
               placement_http_requests(h), placement_http_writes(h),
               res->conflicts ? ", retried after a conflict" : "");
        return 0;
}

/* The state Placement should have: the host's root provider, one child per
 * parent that `inventory --placement` lists (those serving a type they
 * offer, with a total above 0: Nova deletes the provider of a parent with no
 * inventory left; a capped parent holding mdevs keeps them), and the
 * guests' allocations from the record. Returns 0 or the exit status. */
static int desired_read(int rootfd, const Config *c, const char *host, PlacementState *desired) {
        _cleanup_free_ LedgerEntry *entries = NULL;
        _cleanup_free_ PlacementHolding *holdings = NULL;
        _cleanup_free_ PlacementParent *pp = NULL;
        _cleanup_strv_free_ char **nodedevs = NULL;
        InventoryParent *p = NULL;
        size_t n = 0, n_holdings = 0, n_pp = 0;
        int r;

        r = cli_read_inventory("placement sync", rootfd, c, &p, &n);
        if (r > 0)
                return r;
        error_clear();
        r = read_holdings(rootfd, &entries, &holdings, &n_holdings);
        if (r < 0) {
                inventory_free(p, n);
                log_error("placement sync: %s", error_get(r));
                return CLI_EXIT_FAILED;
        }
        pp = calloc(n + 1, sizeof *pp);
        nodedevs = calloc(n + 1, sizeof *nodedevs);
        if (!pp || !nodedevs) {
                inventory_free(p, n);
                return cli_oom();
        }
        for (size_t i = 0; i < n; i++) {
                const ConfigType *t;

                if ((p[i].reason != INVENTORY_OK && p[i].reason != INVENTORY_CAPPED) || p[i].total == 0)
                        continue;
                r = sysfs_parent_nodedev_name(rootfd, p[i].parent, &nodedevs[n_pp]);
                if (r < 0) {
                        inventory_free(p, n);
                        log_error("placement sync: %s", error_get(r));
                        return r == -ENOMEM ? cli_oom() : CLI_EXIT_FAILED;
                }
                t = config_find_type(c, p[i].type);
                pp[n_pp] = (PlacementParent) {
                        .parent = p[i].parent, .nodedev = nodedevs[n_pp], .type = p[i].type,
                        .resource_class = t ? t->mdev_class : "VGPU", .total = p[i].total,
                        .per_type = p[i].several,
                };
                n_pp++;
        }
        r = placement_desired(host, pp, n_pp, holdings, n_holdings, desired, NULL);
        inventory_free(p, n);
        return r < 0 ? cli_oom() : 0;
}

int cli_placement_main(int argc, char *argv[], const char *config_path) {
        Options o = { .cli.config_path = config_path };
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_close_ int rootfd = -1;
        _cleanup_free_ char *token = NULL;
        _cleanup_(placement_state_done) PlacementState desired = { 0 };
        _cleanup_(placement_sync_result_done) PlacementSyncResult res = { 0 };
        _cleanup_placement_http_ PlacementHttp *h = NULL;
        char host[HOST_NAME_MAX + 1];
        const char *url;
        int r;

        r = parse_options(argc, argv, &o);
        if (r >= 0)
                return r;
        if (o.host && !name_is_valid(o.host)) {
                log_error("placement sync: --host '%s' is not a host name", o.host);
                return CLI_EXIT_USAGE;
        }
        r = cli_host_name("placement sync", "--host", o.host, host);
        if (r > 0)
                return r;
        r = cli_open_root_config(o.cli.config_path, &rootfd, &c);
        if (r > 0)
                return r;
        url = o.url ? o.url : c->placement_url;
        if (!url) {
                log_error("placement sync: no Placement URL: give --url or set url in the [placement] section of %s", c->path);
                return CLI_EXIT_USAGE;
        }

        error_clear();
        if (!o.token && c->placement_token_file) {
                r = read_token(rootfd, c->placement_token_file, &token);
                if (r < 0) {
                        log_error("placement sync: %s", error_get(r));
                        return CLI_EXIT_FAILED;
                }
        }
        r = desired_read(rootfd, c, host, &desired);
        if (r > 0)
                return r;

        r = placement_http_new(url, o.token ? o.token : token, PLACEMENT_TIMEOUT, &h);
        if (r >= 0)
                r = placement_sync(h, &desired, &(PlacementSyncOptions) { .rootfd = rootfd, .dry_run = o.dry_run }, &res);
        if (token)
                explicit_bzero(token, strlen(token));
        if (r < 0) {
                log_error("placement sync: %s", error_get(r));
                return r == -ENOMEM ? cli_oom() : CLI_EXIT_FAILED;
        }
        r = print_result(&o, url, host, &res, h);
        if (r < 0)
                return cli_oom();
        return CLI_EXIT_OK;
}
