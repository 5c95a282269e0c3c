/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `mdev-hooks types`: every parent and the types it offers. */
#include "cli.h"
#include "log.h"
#include "backend.h"
#include "sysfs.h"

static const char help[] =
        "Usage: mdev-hooks types [--parent PARENT] [--json]\n"
        "\n"
        "Lists every registered mdev parent and the types it offers: available\n"
        "instances, device API, name and description (\"-\" when the driver gives\n"
        "none). Sorted by parent, then type.\n"
        "A GPU of NVIDIA's VFIO framework (vGPU 17+) is listed by its PF, with the\n"
        "types its VFs carry or can create now; AVAILABLE counts its unprogrammed\n"
        "VFs that list the type (an upper bound: the driver tells whether one more\n"
        "fits on a VF, not how many), and the description its VFs.\n"
        "\n"
        "  -p, --parent PARENT  only this parent (as mdevctl types --parent)\n"
        "  --json     print JSON: {\"parents\": [{\"parent\", \"types\": [...]}]}\n"
        "  --help     show this help\n";

typedef struct ParentTypes {
        char *parent;
        SysfsType *types;
        size_t n_types;
} ParentTypes;

static void parents_free(ParentTypes *p, size_t n) {
        for (size_t i = 0; i < n; i++) {
                for (size_t j = 0; j < p[i].n_types; j++)
                        sysfs_type_done(&p[i].types[j]);
                free(p[i].types);
                free(p[i].parent);
        }
        free(p);
}

/* Reads what it can; every file that cannot be read is logged and makes the
 * result 1, the rest is still shown. */
static int read_host(int rootfd, const char *only, ParentTypes **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **parents = NULL;
        ParentTypes *p;
        size_t n = 0;
        int r, status = CLI_EXIT_OK;

        r = backend_parent_list(rootfd, &parents);
        if (r >= 0)
                strv_sort(parents);
        if (r < 0) {
                log_error("%s", error_get(r));
                return CLI_EXIT_FAILED;
        }
        p = calloc(strv_length(parents) + 1, sizeof *p);
        if (!p)
                return cli_oom();
        for (char **q = parents; *q; q++) {
                const Backend *b;
                ParentTypes *pt;

                if (only && !streq(*q, only))
                        continue;
                pt = &p[n++];
                pt->parent = strdup(*q);
                if (!pt->parent)
                        goto oom;
                error_clear();
                b = backend_of_parent(rootfd, *q);
                r = b ? b->parent_types(rootfd, *q, &pt->types, &pt->n_types)
                      : error_set(-ENOENT, "'%s' is no longer a parent", *q);
                if (r == -ENOMEM)
                        goto oom;
                if (r < 0)
                        log_error("%s", error_get(r));
                if (r != 0)
                        status = CLI_EXIT_FAILED;
        }
        *ret = p;
        *ret_n = n;
        return status;
oom:
        parents_free(p, n);
        return cli_oom();
}

static int print_json(const ParentTypes *p, size_t n) {
        _cleanup_json_ json_object *root = json_object_new_object();
        json_object *parents = json_object_new_array();

        json_object_object_add(root, "parents", parents);
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_new_object(), *types = json_object_new_array();

                json_object_array_add(parents, o);
                json_object_object_add(o, "parent", json_object_new_string(p[i].parent));
                json_object_object_add(o, "types", types);
                for (size_t j = 0; j < p[i].n_types; j++) {
                        const SysfsType *t = &p[i].types[j];
                        json_object *to = json_object_new_object();

                        json_object_array_add(types, to);
                        json_object_object_add(to, "available_instances", json_object_new_int64(t->available));
                        json_object_object_add(to, "description", cli_json_string(t->description));
                        json_object_object_add(to, "device_api", json_object_new_string(t->device_api));
                        json_object_object_add(to, "id", json_object_new_string(t->id));
                        json_object_object_add(to, "name", cli_json_string(t->name));
                }
        }
        return cli_print_json(root);
}

static int print_text(const ParentTypes *p, size_t n, const char *only) {
        static const char * const headers[] = { "PARENT", "TYPE", "AVAILABLE", "API", "NAME", "DESCRIPTION" };
        _cleanup_table_free_ CliTable *t = cli_table_new(headers, ELEMENTSOF(headers), 1u << 2);

        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < p[i].n_types; j++) {
                        const SysfsType *ty = &p[i].types[j];
                        char avail[16];
                        const char *row[] = { p[i].parent, ty->id, avail, ty->device_api, ty->name, ty->description };

                        snprintf(avail, sizeof avail, "%u", ty->available);
                        if (cli_table_add(t, row) < 0)
                                return -ENOMEM;
                }
        if (n == 0) {
                if (only)
                        log_notice("no mdev parent '%s' registered (see 'mdev-hooks types')", only);
                else
                        log_notice("no mdev parents registered (no /sys/class/mdev_bus entries)");
                return 0;
        }
        cli_table_print(t, stdout);
        return 0;
}

int cli_types_main(int argc, char *argv[], const char *config_path) {
        CliOptions o = { .config_path = config_path };
        _cleanup_close_ int rootfd = -1;
        ParentTypes *p = NULL;
        size_t n = 0;
        int r, status;

        r = cli_parse_options(argc, argv, CLI_OPT_JSON | CLI_OPT_PARENT, help, &o);
        if (r >= 0)
                return r;
        r = cli_open_root(&rootfd);
        if (r > 0)
                return r;

        status = read_host(rootfd, o.parent, &p, &n);
        if (!p)
                return status;
        r = o.json ? print_json(p, n) : print_text(p, n, o.parent);
        parents_free(p, n);
        if (r < 0) {
                log_error("cannot print: %s", strerror(-r));
                return CLI_EXIT_FAILED;
        }
        return status;
}
