/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks check-config`: the config's own errors, then the config against
 * the host: a listed address that is not a registered mdev parent, a parent
 * that does not offer the type it is given, an SR-IOV PF that is not there.
 * One line each, "<file>:<line>: <reason>", on stdout; exit 0 clean, 2 not.
 */
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "cli.h"
#include "log.h"
#include "pciaddr.h"
#include "sysfs.h"
#include "backend.h"
#include "amdgim.h"
#include "gpustate.h"
#include "xesriov.h"

static const char help[] =
        "Usage: mdev-hooks check-config [--config FILE] [--json]\n"
        "\n"
        "Checks the config (default /etc/mdev-hooks/mdev-hooks.conf): every error,\n"
        "one line each as <file>:<line>: <reason>. Then checks it against this\n"
        "host: every address in device_addresses must be a registered mdev parent\n"
        "that offers the type, every parent served by the default type must offer\n"
        "it, and every [sriov] PF must be a PCI device here.\n"
        "Exit status: 0 clean, 2 errors, 1 the host could not be read.\n"
        "\n"
        "  --config FILE  check FILE instead\n"
        "  --json         print JSON: {\"config\", \"errors\": [...], \"ok\"}\n"
        "  --help         show this help\n";

/* "nvidia-35, nvidia-36, ..." or NULL. */
static char *offered_types(int rootfd, const char *parent) {
        _cleanup_strv_free_ char **l = NULL;

        if (sysfs_parent_types(rootfd, parent, &l) < 0 || !l[0])
                return NULL;
        return strv_join(l, ", ");
}

typedef struct Finding {
        unsigned line;
        char *msg;            /* without "<file>:<line>: " */
} Finding;

typedef struct Findings {
        Finding *items;
        size_t n;
} Findings;

_printf_(3, 4)
static int finding_add(Findings *f, unsigned line, const char *fmt, ...) {
        Finding *n;
        va_list ap;
        char *msg;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        n = realloc(f->items, (f->n + 1) * sizeof *n);
        if (!n) {
                free(msg);
                return -ENOMEM;
        }
        f->items = n;
        f->items[f->n++] = (Finding) { .line = line, .msg = msg };
        return 0;
}

static void findings_done(Findings *f) {
        for (size_t i = 0; i < f->n; i++)
                free(f->items[i].msg);
        free(f->items);
}

static int cmp_finding(const void *a, const void *b) {
        const Finding *x = a, *y = b;

        if (x->line != y->line)
                return x->line < y->line ? -1 : 1;
        return strcmp(x->msg, y->msg);
}

/* A parent that does not offer the type it gets: one finding. */
static int check_offers(int rootfd, const ConfigType *t, const char *parent, bool listed, Findings *f) {
        _cleanup_free_ char *offered = NULL;
        unsigned u;
        int r;

        error_clear();
        r = sysfs_type_available(rootfd, parent, t->name, &u);
        if (r >= 0)
                return 0;
        if (r != -ENOENT)
                return r;
        offered = offered_types(rootfd, parent);
        if (listed)
                return finding_add(f, t->line, "'%s' in device_addresses of %s does not offer %s (it offers: %s)",
                                   parent, t->name, t->name, strna(offered));
        return finding_add(f, t->line, "'%s' gets the default type %s but does not offer it (it offers: %s); list it under a type it offers",
                           parent, t->name, strna(offered));
}

/* A parent of a backend other than mdev's (backend.h), such as a PF of
 * NVIDIA's VFIO framework: 1 when that backend judged it (a finding added
 * when something is wrong), 0 when it is none's. */
static int check_backends(int rootfd, const ConfigType *t, const char *a, Findings *f) {
        const Backend *b;

        BACKEND_FOREACH(b) {
                _cleanup_free_ char *problem = NULL;
                int r;

                if (!b->parent_check)
                        continue;
                error_clear();
                r = b->parent_check(rootfd, a, t->name, &problem);
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        continue;
                }
                if (problem) {
                        r = finding_add(f, t->line, "'%s' in device_addresses of %s %s", a, t->name, problem);
                        if (r < 0)
                                return r;
                }
                return 1;
        }
        return 0;
}

/* A PF with [gpu_<PF>] whose VFs are not there yet: its plan makes them
 * (an AMD GPU's plan makes none: check_amd_gpu() says what is wrong).
 * 1 if so (the finding added), 0 if not. */
static int check_declared_without_vfs(int rootfd, const Config *c, const ConfigType *t, const char *pf, Findings *f) {
        const ConfigGpu *g = config_gpu(c, pf);
        char path[128], num[32];
        int r;

        if (!g || g->spatial_partition)
                return 0;
        snprintf(path, sizeof path, "sys/bus/pci/devices/%s/sriov_numvfs", pf);
        if (read_small_at(rootfd, path, num, sizeof num) < 0 || !streq(num, "0"))
                return 0;
        r = finding_add(f, t->line, "'%s' in device_addresses of %s has no VFs yet: its boot plan makes them (mdev-hooks gpu plan %s)",
                        pf, t->name, pf);
        return r < 0 ? r : 1;
}

/* An AMD GPU's [gpu_<PF>] spatial_partition: is GIM's partition the one,
 * and so its VFs? One line when not; nothing is changed. */
static int check_amd_gpu(int rootfd, const ConfigGpu *g, Findings *f) {
        AmdgimPartition part;
        char msg[512];

        error_clear();
        if (amdgim_pf_partition(rootfd, g->address, &part) < 0)
                return finding_add(f, g->line, "[gpu_%s] has spatial_partition = %s, but %s", g->address, g->spatial_partition,
                                   error_get(-EIO));
        if (amdgim_partition_check(g->address, &part, g->spatial_partition, msg, sizeof msg) == 0)
                return 0;
        return finding_add(f, g->line, "%s", msg);
}

/* [gpu_<PF>]: the PF is here, the tools can run, and the GPU can run its
 * declared mode where nvidia-smi -q says, is in its declared partition
 * (AMD), or can have its declared VFs (Intel xe) (doc/design.md §9). */
static int check_gpus(int rootfd, const Config *c, Findings *f) {
        const char *smi = c->gpu_nvidia_smi ? c->gpu_nvidia_smi : CONFIG_GPU_NVIDIA_SMI;
        const char *sm = c->gpu_sriov_manage ? c->gpu_sriov_manage : CONFIG_GPU_SRIOV_MANAGE;
        bool nvidia_seen = false;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < c->n_gpus; i++) {
                const ConfigGpu *g = &c->gpus[i];
                _cleanup_(gpu_tool_run_done) GpuToolRun t = { 0 };
                GpuState s = { .mig = GPU_UNKNOWN };
                char path[128];
                struct stat st;
                bool nvidia = config_gpu_is_nvidia(g), first_nvidia = nvidia && !nvidia_seen;

                nvidia_seen |= nvidia;
                snprintf(path, sizeof path, "sys/bus/pci/devices/%s", g->address);
                if (fstatat(rootfd, path, &st, 0) < 0) {
                        r = finding_add(f, g->line, "[gpu_%s] is not a PCI device on this host (no /%s)", g->address, path);
                        continue;
                }
                if (g->spatial_partition) {
                        r = check_amd_gpu(rootfd, g, f);
                        continue;
                }
                if (g->vfs) {
                        error_clear();
                        if (xesriov_pf_check(rootfd, g->address, g->vfs) < 0)
                                r = finding_add(f, g->line, "%s", error_get(-EIO));
                        continue;
                }
                if (first_nvidia && access(sm, X_OK) < 0)
                        r = finding_add(f, g->line, "[gpu] sriov_manage '%s' cannot be run: %s", sm, strerror(errno));
                error_clear();
                if (r < 0 || gpu_tool_run(smi, "-q -i", g->address, &t) < 0 || t.exit != 0) {
                        if (r >= 0)
                                r = finding_add(f, g->line, "[gpu_%s]: '%s -q -i %s' failed: whether the GPU can run mode = %s cannot be checked",
                                                g->address, smi, g->address, config_gpu_mode_to_string(g->mode));
                        continue;
                }
                gpu_state_parse_query(t.output, &s);
                if (g->mode == CONFIG_GPU_MODE_MIXED && !s.het_capable)
                        r = finding_add(f, g->line, "[gpu_%s] has mode = mixed, but nvidia-smi -q does not say 'Heterogeneous Time-Slice Sizes : Supported' for it",
                                        g->address);
                else if (g->mode == CONFIG_GPU_MODE_MIG && s.mig == GPU_UNKNOWN)
                        r = finding_add(f, g->line, "[gpu_%s] has mode = mig, but nvidia-smi -q shows no MIG mode for it (a GPU without MIG)",
                                        g->address);
        }
        return r;
}

static int check_host(int rootfd, const Config *c, Findings *f) {
        _cleanup_strv_free_ char **parents = NULL;
        int r;

        error_clear();
        r = sysfs_parent_list(rootfd, &parents);
        if (r < 0)
                return r;

        for (size_t i = 0; i < c->n_types; i++) {
                const ConfigType *t = &c->types[i];

                for (char **a = t->addresses; a && *a; a++) {
                        r = check_declared_without_vfs(rootfd, c, t, *a, f);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                continue;
                        r = check_backends(rootfd, t, *a, f);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                continue;
                        if (strv_contains(parents, *a))
                                r = check_offers(rootfd, t, *a, true, f);
                        else if (sysfs_parent_device_present(rootfd, *a) > 0)
                                r = finding_add(f, t->line,
                                                "'%s' in device_addresses of %s is a device here but not a registered mdev parent (no /sys/class/mdev_bus/%s): is its vGPU driver loaded?",
                                                *a, t->name, *a);
                        else
                                r = finding_add(f, t->line,
                                                "'%s' in device_addresses of %s is not a registered mdev parent on this host (no /sys/class/mdev_bus/%s)",
                                                *a, t->name, *a);
                        if (r < 0)
                                return r;
                }
        }
        if (c->default_type)
                for (char **p = parents; *p; p++) {
                        if (config_parent_is_listed(c, *p))
                                continue;
                        r = check_offers(rootfd, c->default_type, *p, false, f);
                        if (r < 0)
                                return r;
                }
        for (size_t i = 0; i < c->n_sriov; i++) {
                _cleanup_free_ char *path = strdup_printf("sys/bus/pci/devices/%s", c->sriov[i].address);
                struct stat st;

                if (!path)
                        return -ENOMEM;
                if (fstatat(rootfd, path, &st, 0) >= 0)
                        continue;
                if (errno != ENOENT)
                        return error_set(-errno, "cannot stat '/%s': %s", path, strerror(errno));
                r = finding_add(f, c->sriov[i].line, "[sriov] '%s' is not a PCI device on this host (no /%s)",
                                c->sriov[i].address, path);
                if (r < 0)
                        return r;
        }

        r = check_gpus(rootfd, c, f);
        if (r < 0)
                return r;
        if (f->n > 1)
                qsort(f->items, f->n, sizeof *f->items, cmp_finding);
        return 0;
}

static int print_json(const char *path, char **lines) {
        _cleanup_json_ json_object *root = json_object_new_object();
        json_object *a = json_object_new_array();

        json_object_object_add(root, "config", json_object_new_string(path));
        json_object_object_add(root, "errors", a);
        for (char **l = lines; l && *l; l++)
                json_object_array_add(a, json_object_new_string(*l));
        json_object_object_add(root, "ok", json_object_new_boolean(strv_length(lines) == 0));
        return cli_print_json(root);
}

int cli_check_config_main(int argc, char *argv[], const char *config_path) {
        CliOptions o = { .config_path = config_path };
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_strv_free_ char **lines = NULL;
        _cleanup_close_ int rootfd = -1;
        const char *shown;
        int r;

        r = cli_parse_options(argc, argv, CLI_OPT_JSON, help, &o);
        if (r >= 0)
                return r;
        r = cli_open_root(&rootfd);
        if (r > 0)
                return r;
        shown = o.config_path ? o.config_path : "/" CONFIG_DEFAULT_PATH;

        error_clear();
        r = config_load(rootfd, o.config_path, &c, &lines);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                if (strv_length(lines) == 0 && strv_extend(&lines, error_get(r)) < 0)
                        return cli_oom();
        } else {
                Findings f = { 0 };

                /* What the hook and the other programs accept with a warning,
                 * as Nova does, check-config refuses: the operator who runs
                 * it wants the config meant, not what Nova makes of it. */
                for (char **w = c->warnings; w && *w; w++)
                        if (strv_extend(&lines, *w) < 0)
                                return cli_oom();
                r = check_host(rootfd, c, &f);
                for (size_t i = 0; r >= 0 && i < f.n; i++)
                        r = strv_consume(&lines, strdup_printf("%s:%u: %s", c->path, f.items[i].line, f.items[i].msg));
                findings_done(&f);
                if (r == -ENOMEM)
                        return cli_oom();
                if (r < 0) {
                        log_error("cannot check the config against this host: %s", error_get(r));
                        return CLI_EXIT_FAILED;
                }
        }

        if (o.json) {
                if (print_json(shown, lines) < 0)
                        return cli_oom();
        } else if (strv_length(lines) == 0) {
                struct stat st;

                if (!o.config_path && fstatat(rootfd, CONFIG_DEFAULT_PATH, &st, 0) < 0 && errno == ENOENT)
                        printf("%s: not present: no mdev types enabled\n", shown);
                else
                        printf("%s: ok\n", shown);
        }
        else
                for (char **l = lines; *l; l++)
                        puts(*l);
        return strv_length(lines) == 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
}
