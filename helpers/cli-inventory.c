/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks inventory`: per parent, its configured type and class, and
 * Nova's total / used / free (inventory.c); --placement prints the resource
 * providers Nova would report to Placement.
 */
#include <limits.h>

#include "cli.h"
#include "inventory.h"
#include "log.h"
#include "sysfs.h"
#include "vfio.h"

static const char help[] =
        "Usage: mdev-hooks inventory [--json | --placement [--hostname NAME]]\n"
        "                            [--config FILE]\n"
        "\n"
        "Per registered mdev parent: the type the config gives it and that type's\n"
        "mdev_class, and the capacity as OpenStack Nova counts it:\n"
        "  total = existing mdevs of the type + the type's available_instances;\n"
        "          under the type's max_instances, the existing mdevs of every\n"
        "          parent count first, then a parent whose available_instances\n"
        "          would pass the cap gets none of them (parents in sorted order)\n"
        "  used  = existing mdevs of the type on the parent\n"
        "  free  = total - used\n"
        "A parent without a type, or not offering it, is listed with the reason.\n"
        "A GPU of NVIDIA's VFIO framework (vGPU 17+) is one parent, its PF: used =\n"
        "its VFs with the type, available = its free VFs that list it (an upper\n"
        "bound); with [gpu_PF], what fits by its mode (gpu status --json). A GPU\n"
        "listed under several types has a row (and a --placement provider,\n"
        "<host>_<node device>_<type>) per type: what fits of it now, alone.\n"
        "\n"
        "  --json            print JSON: {\"parents\": [...]}\n"
        "  --placement       print resource providers in the shape of the Placement\n"
        "                    API, named <host>_<libvirt node device> as Nova names them\n"
        "  --hostname NAME   the host part of those names (default: gethostname())\n"
        "  --config FILE     read FILE instead of /etc/mdev-hooks/mdev-hooks.conf\n"
        "  --help            show this help\n";

static const char *reason_id(InventoryReason r) {
        switch (r) {
        case INVENTORY_OK:
                return "ok";
        case INVENTORY_NO_TYPE:
                return "no-type";
        case INVENTORY_NOT_OFFERED:
                return "not-offered";
        case INVENTORY_CAPPED:
                return "capped";
        default:
                return NULL;
        }
}

static int print_text(const Config *c, const InventoryParent *p, size_t n) {
        static const char * const headers[] = { "PARENT", "TYPE", "CLASS", "TOTAL", "USED", "FREE", "NOTE" };
        _cleanup_table_free_ CliTable *t = cli_table_new(headers, ELEMENTSOF(headers), (1u << 3) | (1u << 4) | (1u << 5));

        if (!t)
                return -ENOMEM;
        if (n == 0) {
                log_notice("no mdev parents registered (no /sys/class/mdev_bus entries)");
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                const ConfigType *ct = p[i].type ? config_find_type(c, p[i].type) : NULL;
                _cleanup_free_ char *note = NULL;
                char total[16], used[16], free_[16];
                const char *row[] = { p[i].parent, p[i].type, ct ? ct->mdev_class : NULL, total, used, free_, "" };

                snprintf(total, sizeof total, "%u", p[i].total);
                snprintf(used, sizeof used, "%u", p[i].used);
                snprintf(free_, sizeof free_, "%u", p[i].free);
                if (p[i].reason == INVENTORY_CAPPED)
                        note = strdup_printf("capped: its available instances would pass max_instances = %u of %s", p[i].max_instances, p[i].type);
                else if (p[i].reason == INVENTORY_NOT_OFFERED)
                        note = strdup_printf("does not offer %s", p[i].type);
                else if (p[i].reason == INVENTORY_NO_TYPE)
                        note = strdup(c->n_types == 0 ? "no type enabled in the config" : "no type configured for it");
                if (note)
                        row[6] = note;
                if (cli_table_add(t, row) < 0)
                        return -ENOMEM;
        }
        cli_table_print(t, stdout);
        return 0;
}

static int print_json(const Config *c, const InventoryParent *p, size_t n) {
        _cleanup_json_ json_object *root = json_object_new_object();
        json_object *a = json_object_new_array();

        json_object_object_add(root, "parents", a);
        for (size_t i = 0; i < n; i++) {
                const ConfigType *ct = p[i].type ? config_find_type(c, p[i].type) : NULL;
                json_object *o = json_object_new_object();

                json_object_array_add(a, o);
                json_object_object_add(o, "free", json_object_new_int64(p[i].free));
                json_object_object_add(o, "max_instances", ct && ct->max_instances ? json_object_new_int64(ct->max_instances) : NULL);
                json_object_object_add(o, "mdev_class", cli_json_string(ct ? ct->mdev_class : NULL));
                json_object_object_add(o, "parent", json_object_new_string(p[i].parent));
                json_object_object_add(o, "status", json_object_new_string(reason_id(p[i].reason)));
                json_object_object_add(o, "total", json_object_new_int64(p[i].total));
                json_object_object_add(o, "type", cli_json_string(p[i].type));
                json_object_object_add(o, "used", json_object_new_int64(p[i].used));
        }
        return cli_print_json(root);
}

/* Placement's shape: GET /resource_providers, .../inventories, .../usages, .../traits,
 * one object per provider. A parent whose total is 0 (capped by
 * max_instances and holding no mdev) has no provider: Nova deletes the
 * provider of such a parent, and Placement refuses a total below 1. A capped
 * parent that holds mdevs keeps its provider, with total = used (its mdevs
 * stay in the usages) and so nothing free. */
static int print_placement(int rootfd, const Config *c, const InventoryParent *p, size_t n, const char *host) {
        _cleanup_json_ json_object *root = json_object_new_object();
        json_object *a = json_object_new_array();

        json_object_object_add(root, "resource_providers", a);
        for (size_t i = 0; i < n; i++) {
                const ConfigType *ct;
                _cleanup_free_ char *node = NULL, *name = NULL, *trait = NULL;
                json_object *o, *inventories, *inv, *usages, *traits;
                int r;

                if ((p[i].reason != INVENTORY_OK && p[i].reason != INVENTORY_CAPPED) || p[i].total == 0)
                        continue;
                ct = config_find_type(c, p[i].type);
                r = sysfs_parent_nodedev_name(rootfd, p[i].parent, &node);
                if (r < 0)
                        return r;
                trait = inventory_type_trait(p[i].type);
                if (!ct || !trait)
                        return -ENOMEM;
                name = inventory_provider_name(host, node, p[i].type, p[i].several);
                if (!name)
                        return -ENOMEM;

                o = json_object_new_object();
                json_object_array_add(a, o);
                inventories = json_object_new_object();
                usages = json_object_new_object();
                inv = json_object_new_object();
                json_object_object_add(inv, "allocation_ratio", json_object_new_double(1.0));
                json_object_object_add(inv, "max_unit", json_object_new_int64(p[i].total));
                json_object_object_add(inv, "min_unit", json_object_new_int64(1));
                json_object_object_add(inv, "reserved", json_object_new_int64(0));
                json_object_object_add(inv, "step_size", json_object_new_int64(1));
                json_object_object_add(inv, "total", json_object_new_int64(p[i].total));
                json_object_object_add(inventories, ct->mdev_class, inv);
                json_object_object_add(usages, ct->mdev_class, json_object_new_int64(p[i].used));
                json_object_object_add(o, "inventories", inventories);
                json_object_object_add(o, "name", json_object_new_string(name));
                json_object_object_add(o, "parent_provider_name", json_object_new_string(host));
                traits = json_object_new_array();
                json_object_array_add(traits, json_object_new_string(trait));
                json_object_object_add(o, "traits", traits);
                json_object_object_add(o, "usages", usages);
        }
        return cli_print_json(root);
}

int cli_inventory_main(int argc, char *argv[], const char *config_path) {
        CliOptions o = { .config_path = config_path };
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_close_ int rootfd = -1;
        InventoryParent *p = NULL;
        char host[HOST_NAME_MAX + 1];
        size_t n = 0;
        int r;

        r = cli_parse_options(argc, argv, CLI_OPT_JSON | CLI_OPT_PLACEMENT | CLI_OPT_HOSTNAME, help, &o);
        if (r >= 0)
                return r;
        if (o.json && o.placement) {
                log_error("inventory: --json and --placement exclude each other (--placement is JSON too)");
                return CLI_EXIT_USAGE;
        }
        if (o.hostname && !o.placement) {
                log_error("inventory: --hostname names the resource providers of --placement; add --placement");
                return CLI_EXIT_USAGE;
        }
        r = cli_host_name("inventory", "--hostname", o.hostname, host);
        if (r > 0)
                return r;
        r = cli_open_root_config(o.config_path, &rootfd, &c);
        if (r > 0)
                return r;

        r = cli_read_inventory(NULL, rootfd, c, &p, &n);
        if (r > 0)
                return r;
        if (o.placement)
                r = print_placement(rootfd, c, p, n, host);
        else if (o.json)
                r = print_json(c, p, n);
        else
                r = print_text(c, p, n);
        inventory_free(p, n);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                log_error("%s", error_get(r));
                return CLI_EXIT_FAILED;
        }
        return CLI_EXIT_OK;
}
