/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks gpu plan [PF]` and `mdev-hooks gpu status [--json]`: a GPU's
 * boot plan by hand (what mdev-hooks-gpu@PF.service runs when the PF
 * appears), and each configured GPU's declared state beside its actual one
 * (gpuplan.h for NVIDIA's modes; an AMD GPU's partition is only checked,
 * amdgim.h; an Intel GPU's VFs are provisioned, xesriov.h).
 */
#include <inttypes.h>

#include "amdgim.h"
#include "cli.h"
#include "gpuplan.h"
#include "log.h"
#include "pciaddr.h"
#include "uevent.h"
#include "xesriov.h"

static const char help[] =
        "Usage: mdev-hooks gpu plan [--if-declared] [PF]\n"
        "       mdev-hooks gpu status [--json]\n"
        "\n"
        "GPUs with a [gpu_PF] section in the config. 'plan' brings each NVIDIA\n"
        "GPU (or only PF) to its declared mode (mode = equal | mixed | mig), in\n"
        "the order the driver needs: MIG mode, the VFs (sriov-manage -e), the\n"
        "heterogeneous mode, the GPU instances; each step is read back. Running\n"
        "it again changes nothing. An AMD GPU's partition (spatial_partition =)\n"
        "is only checked: one that differs is one line and a failure. An Intel\n"
        "GPU's (vfs =, vram_quota =, exec_quantum_ms =, preempt_timeout_us =,\n"
        "each one value or one per VF): the quotas and scheduling, then the VFs,\n"
        "read back; a VF a guest holds keeps the scheduling its entry set.\n"
        "mdev-hooks-gpu@PF.service runs it when the PF appears. 'status' shows\n"
        "each GPU's declared and actual state and the\n"
        "steps a plan would take; --json also how many more vGPUs of each type\n"
        "fit now, by the GPU's mode (sizes from the types' names).\n"
        "\n"
        "  --if-declared  plan: a PF without [gpu_PF] is no error (the service)\n"
        "  --json     status as JSON\n"
        "  --help     show this help\n";

/* An AMD GPU's plan only checks: mdev-hooks never writes a partition (GIM
 * reports a failed write as done). One line, and failure, when it is not
 * the declared one. */
static int plan_amd(int rootfd, const ConfigGpu *g) {
        AmdgimPartition part;
        char msg[512];

        error_clear();
        if (amdgim_pf_partition(rootfd, g->address, &part) < 0) {
                log_error("[gpu_%s] has spatial_partition = %s, but %s", g->address, g->spatial_partition, error_get(-EIO));
                return CLI_EXIT_FAILED;
        }
        if (amdgim_partition_check(g->address, &part, g->spatial_partition, msg, sizeof msg) != 0) {
                log_error("%s", msg);
                return CLI_EXIT_FAILED;
        }
        printf("%s: %s, %u %s: as declared (checked, never changed)\n", g->address, part.spatial, part.nvfs,
               part.nvfs == 1 ? "VF" : "VFs");
        return CLI_EXIT_OK;
}

/* A per-VF key's values, "8G" or "8G/8G/4G/4G" (sizes for vram_quota). */
static void list_words(const ConfigGpuList *l, bool size, char *buf, size_t len) {
        size_t o = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < l->n && o < len; i++) {
                char v[32];

                if (size)
                        xesriov_format_size(l->v[i], v, sizeof v);
                else
                        snprintf(v, sizeof v, "%" PRIu64, l->v[i]);
                o += (size_t) snprintf(buf + o, len - o, "%s%s", i ? "/" : "", v);
        }
}

/* ", exec_quantum_ms 20, preempt_timeout_us 0/0/100/100": the scheduling
 * declared, appended at buf[o]. */
static void xe_sched_words(const ConfigGpu *g, char *buf, size_t o, size_t len) {
        char v[256];

        if (o < len && g->exec_quantum_ms.n) {
                list_words(&g->exec_quantum_ms, false, v, sizeof v);
                o += (size_t) snprintf(buf + o, len - o, ", exec_quantum_ms %s", v);
        }
        if (o < len && g->preempt_timeout_us.n) {
                list_words(&g->preempt_timeout_us, false, v, sizeof v);
                snprintf(buf + o, len - o, ", preempt_timeout_us %s", v);
        }
}

/* "8G of VRAM each", "VRAM 8G/8G/4G/4G", "VRAM shared out by the driver",
 * then the scheduling declared: an Intel GPU's declared profile in words. */
static void xe_declared_words(const ConfigGpu *g, char *buf, size_t len) {
        char v[256];
        size_t o;

        list_words(&g->vram_quota, true, v, sizeof v);
        if (g->vram_quota.n == 0)
                o = (size_t) snprintf(buf, len, "VRAM shared out by the driver");
        else if (g->vram_quota.n == 1)
                o = (size_t) snprintf(buf, len, "%s of VRAM each", v);
        else
                o = (size_t) snprintf(buf, len, "VRAM %s", v);
        xe_sched_words(g, buf, o, len);
}

/* An Intel xe GPU's plan: its VFs' quotas and scheduling while they are
 * disabled, then the VFs (xesriov_pf_provision()). */
static int plan_xe(int rootfd, const ConfigGpu *g) {
        _cleanup_free_ XesriovVfProfile *vf = NULL;
        unsigned changed = 0, held = 0;
        char what[512], left[160] = "";

        xe_declared_words(g, what, sizeof what);
        if (xesriov_declared_from_config(g, &vf) < 0)
                return cli_oom();
        error_clear();
        if (xesriov_pf_provision(rootfd, g->address, vf, g->vfs, &changed, &held) < 0) {
                log_error("%s", error_get(-EIO));
                return CLI_EXIT_FAILED;
        }
        if (held)
                snprintf(left, sizeof left, "; the scheduling of %u %s a guest holds is left as its entry set it", held,
                         held == 1 ? "VF" : "VFs");
        if (changed)
                printf("%s: %u VFs, %s: brought to its declared state (%u %s)%s\n", g->address, g->vfs, what, changed,
                       changed == 1 ? "write" : "writes", left);
        else
                printf("%s: %u VFs, %s: already in its declared state%s\n", g->address, g->vfs, what, left);
        return CLI_EXIT_OK;
}

static int plan_one(int rootfd, const Config *c, const ConfigGpu *g) {
        unsigned changed = 0, made = 0;
        int r;

        if (g->spatial_partition)
                return plan_amd(rootfd, g);
        if (g->vfs)
                return plan_xe(rootfd, g);

        error_clear();
        r = gpu_plan_run(rootfd, c, g, &changed);
        if (r >= 0)
                r = uevent_gpu_ready(rootfd, g->address, &made);
        if (r < 0) {
                log_error("%s", error_get(r));
                return CLI_EXIT_FAILED;
        }
        if (made)
                printf("%s: programmed %u guest %s again (recreate = eager)\n", g->address, made, made == 1 ? "VF" : "VFs");
        if (changed)
                printf("%s: %s: brought to its declared state (%u %s)\n", g->address, config_gpu_mode_to_string(g->mode),
                       changed, changed == 1 ? "step" : "steps");
        else
                printf("%s: %s: already in its declared state\n", g->address, config_gpu_mode_to_string(g->mode));
        return CLI_EXIT_OK;
}

static int plan_main(int rootfd, const Config *c, const char *pf, bool if_declared) {
        int ret = CLI_EXIT_OK;

        if (pf) {
                char pci[PCI_ADDRESS_STRING_MAX];
                const ConfigGpu *g = pci_address_normalize(pf, pci) ? config_gpu(c, pci) : NULL;

                if (!g && if_declared) {
                        log_info("%s has no [gpu_%s] section: nothing is declared for it", pf, pf);
                        return CLI_EXIT_OK;
                }
                if (!g) {
                        log_error("'%s' has no [gpu_%s] section in %s: nothing is declared for it", pf, pf,
                                  c->path ? c->path : "/" CONFIG_DEFAULT_PATH);
                        return CLI_EXIT_FAILED;
                }
                return plan_one(rootfd, c, g);
        }
        if (c->n_gpus == 0)
                log_notice("no [gpu_PF] section in the config: no GPU has a declared state");
        for (size_t i = 0; i < c->n_gpus; i++)
                if (plan_one(rootfd, c, &c->gpus[i]) != CLI_EXIT_OK)
                        ret = CLI_EXIT_FAILED; /* the others still run */
        return ret;
}

/* One GPU's row: its state read, and the plan from there. */
typedef struct GpuRow {
        const ConfigGpu *g;
        GpuState s;
        GpuPlan p;
        GpuOffer *offers; /* what fits now, per type a free VF lists */
        size_t n_offers;
        const char *error; /* its state could not be read */
        AmdgimPartition amd; /* an AMD GPU's partition as read */
        int xe_done;          /* an Intel GPU: 1 provisioned as declared, 0 not */
        XesriovState xe;      /* an Intel GPU's state against its declared one */
        char differs[96];     /* AMD, Intel: how it differs from the declared state, "" if not */
        char declared[256];   /* AMD, Intel: the declared state, shown */
} GpuRow;

static const char *tristate_string(GpuTristate t) {
        return t == GPU_ON ? "on" : t == GPU_OFF ? "off" : "unknown";
}

static json_object *tristate_json(GpuTristate t) {
        return t == GPU_UNKNOWN ? NULL : json_object_new_boolean(t == GPU_ON);
}

static json_object *strv_json(char **l) {
        json_object *a = json_object_new_array();

        for (char **i = l; a && i && *i; i++)
                json_object_array_add(a, json_object_new_string(*i));
        return a;
}

/* An AMD GPU's row: its partition declared and read, never a step. */
static json_object *row_json_amd(const GpuRow *r) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "address", json_object_new_string(r->g->address));
        json_object_object_add(o, "declared_spatial_partition", json_object_new_string(r->g->spatial_partition));
        json_object_object_add(o, "error", cli_json_string(r->error));
        json_object_object_add(o, "numvfs", json_object_new_int64(r->s.numvfs));
        json_object_object_add(o, "partition_differs", r->error ? NULL : json_object_new_boolean(r->differs[0] != '\0'));
        json_object_object_add(o, "pending_steps", json_object_new_array());
        json_object_object_add(o, "spatial_partition", r->error || !r->amd.spatial[0] ? NULL : json_object_new_string(r->amd.spatial));
        return o;
}

/* An Intel GPU's step a plan would take: "provision" (quotas and VFs),
 * "schedule" (only the scheduling knobs differ), or NULL. */
static const char *xe_pending(const GpuRow *r) {
        if (r->error || r->xe_done || r->differs[0])
                return NULL;
        return r->xe.numvfs == r->g->vfs && !r->xe.quotas_differ ? "schedule" : "provision";
}

/* A per-VF key declared, one value per VF (null: not declared). */
static json_object *xe_list_json(const ConfigGpu *g, const ConfigGpuList *l) {
        json_object *a;
        uint64_t v;

        if (l->n == 0)
                return NULL;
        a = json_object_new_array();
        for (unsigned k = 1; a && k <= g->vfs && config_gpu_list_get(l, k, &v); k++)
                json_object_array_add(a, json_object_new_int64((int64_t) v));
        return a;
}

/* An Intel xe GPU's row: its VFs and their profile declared, the VFs it has. */
static json_object *row_json_xe(const GpuRow *r) {
        json_object *o = json_object_new_object(), *steps = json_object_new_array();
        const ConfigGpu *g = r->g;

        json_object_object_add(o, "address", json_object_new_string(g->address));
        json_object_object_add(o, "declared_exec_quantum_ms", xe_list_json(g, &g->exec_quantum_ms));
        json_object_object_add(o, "declared_preempt_timeout_us", xe_list_json(g, &g->preempt_timeout_us));
        json_object_object_add(o, "declared_vfs", json_object_new_int64(g->vfs));
        json_object_object_add(o, "declared_vram_quota", g->vram_quota.n == 1 ? json_object_new_int64((int64_t) g->vram_quota.v[0]) : NULL);
        json_object_object_add(o, "declared_vram_quotas", xe_list_json(g, &g->vram_quota));
        json_object_object_add(o, "error", cli_json_string(r->error));
        json_object_object_add(o, "held", json_object_new_int64(r->xe.held));
        json_object_object_add(o, "numvfs", json_object_new_int64(r->s.numvfs));
        if (xe_pending(r))
                json_object_array_add(steps, json_object_new_string(xe_pending(r)));
        json_object_object_add(o, "pending_steps", steps);
        json_object_object_add(o, "provisioned", r->error ? NULL : json_object_new_boolean(r->xe_done == 1));
        return o;
}

static json_object *row_json(const GpuRow *r) {
        json_object *o, *steps;

        if (r->g->spatial_partition)
                return row_json_amd(r);
        if (r->g->vfs)
                return row_json_xe(r);
        o = json_object_new_object();
        steps = json_object_new_array();
        json_object_object_add(o, "address", json_object_new_string(r->g->address));
        json_object_object_add(o, "declared_mig_instances", strv_json(r->g->mig_instances));
        json_object_object_add(o, "declared_mode", json_object_new_string(config_gpu_mode_to_string(r->g->mode)));
        json_object_object_add(o, "error", cli_json_string(r->error));
        json_object_object_add(o, "gpu_instances", strv_json(r->s.gis));
        json_object_object_add(o, "heterogeneous", tristate_json(r->s.het));
        json_object_object_add(o, "mig", tristate_json(r->s.mig));
        json_object_object_add(o, "numvfs", json_object_new_int64(r->s.numvfs));
        json_object *offers = json_object_new_array();
        for (size_t i = 0; i < r->n_offers; i++) {
                json_object *t = json_object_new_object();

                json_object_object_add(t, "free", r->offers[i].sized ? json_object_new_int64(r->offers[i].free) : NULL);
                json_object_object_add(t, "name", json_object_new_string(r->offers[i].name));
                json_object_object_add(t, "type", json_object_new_string(r->offers[i].type));
                json_object_array_add(offers, t);
        }
        json_object_object_add(o, "offers", offers);
        for (size_t i = 0; !r->error && i < r->p.n; i++)
                json_object_array_add(steps, json_object_new_string(gpu_step_to_string(r->p.steps[i])));
        json_object_object_add(o, "pending_steps", steps);
        json_object_object_add(o, "vgpus", json_object_new_boolean(r->s.vgpus));
        return o;
}

static int print_text(const GpuRow *rows, size_t n) {
        static const char * const headers[] = { "GPU", "DECLARED", "MIG", "HETEROGENEOUS", "VFS", "GPU-INSTANCES", "PENDING" };
        _cleanup_table_free_ CliTable *t = cli_table_new(headers, ELEMENTSOF(headers), 1u << 4);

        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const GpuRow *r = &rows[i];
                char vfs[16], gis[256] = "", pending[128] = "";

                snprintf(vfs, sizeof vfs, "%u", r->s.numvfs);
                for (char **g = r->s.gis; g && *g; g++)
                        snprintf(gis + strlen(gis), sizeof gis - strlen(gis), "%s%s", gis[0] ? "," : "", *g);
                for (size_t k = 0; k < r->p.n; k++)
                        snprintf(pending + strlen(pending), sizeof pending - strlen(pending), "%s%s", pending[0] ? "," : "",
                                 gpu_step_to_string(r->p.steps[k]));
                bool nvidia = config_gpu_is_nvidia(r->g); /* AMD, Intel: no modes */
                const char *row[] = { r->g->address, nvidia ? config_gpu_mode_to_string(r->g->mode) : r->declared,
                                      nvidia ? tristate_string(r->s.mig) : "n/a",
                                      !nvidia || r->s.mig == GPU_ON ? "n/a" : tristate_string(r->s.het), vfs, gis[0] ? gis : NULL,
                                      r->error ? r->error : r->differs[0] ? r->differs : pending[0] ? pending :
                                      r->g->vfs && xe_pending(r) ? xe_pending(r) : "none" };
                if (cli_table_add(t, row) < 0)
                        return -ENOMEM;
        }
        cli_table_print(t, stdout);
        return 0;
}

/* An AMD GPU's row: its partition read and compared with the declared one. */
static void status_amd(int rootfd, GpuRow *row) {
        char msg[512];

        row->s.mig = row->s.het = GPU_UNKNOWN;
        snprintf(row->declared, sizeof row->declared, "%s", row->g->spatial_partition);
        error_clear();
        if (amdgim_pf_partition(rootfd, row->g->address, &row->amd) < 0) {
                row->error = strdup(error_get(-EIO));
                return;
        }
        row->s.numvfs = row->amd.nvfs;
        if (amdgim_partition_check(row->g->address, &row->amd, row->g->spatial_partition, msg, sizeof msg) != 0)
                snprintf(row->differs, sizeof row->differs, "differs: is %s, %u VFs",
                         row->amd.spatial[0] ? row->amd.spatial : "unknown", row->amd.nvfs);
}

/* An Intel xe GPU's row: its VFs and their profile against the declared ones. */
static void status_xe(int rootfd, GpuRow *row) {
        _cleanup_free_ XesriovVfProfile *vf = NULL;
        const ConfigGpu *g = row->g;
        char words[224];
        size_t o;
        int r;

        row->s.mig = row->s.het = GPU_UNKNOWN;
        list_words(&g->vram_quota, true, words, sizeof words);
        o = (size_t) snprintf(row->declared, sizeof row->declared, "%u VFs%s%s", g->vfs, words[0] ? " x " : "", words);
        xe_sched_words(g, row->declared, o, sizeof row->declared);
        error_clear();
        r = xesriov_declared_from_config(g, &vf);
        if (r >= 0)
                r = xesriov_pf_check(rootfd, g->address, g->vfs);
        if (r >= 0)
                r = xesriov_pf_state(rootfd, g->address, vf, g->vfs, &row->xe);
        if (r < 0) {
                row->error = strdup(error_get(r));
                return;
        }
        row->s.numvfs = row->xe.numvfs;
        row->xe_done = r;
        if (row->xe.numvfs == g->vfs && row->xe.quotas_differ)
                snprintf(row->differs, sizeof row->differs, "differs: other VRAM quotas");
        else if (row->xe.numvfs != g->vfs && row->xe.numvfs != 0)
                snprintf(row->differs, sizeof row->differs, "differs: %u VFs enabled", row->xe.numvfs);
}

static int status_main(int rootfd, const Config *c, bool json) {
        _cleanup_free_ GpuRow *rows = calloc(c->n_gpus + 1, sizeof *rows);
        _cleanup_json_ json_object *root = NULL;
        int r = 0;

        if (!rows)
                return cli_oom();
        for (size_t i = 0; i < c->n_gpus; i++) {
                rows[i].g = &c->gpus[i];
                if (c->gpus[i].spatial_partition || c->gpus[i].vfs) {
                        (c->gpus[i].vfs ? status_xe : status_amd)(rootfd, &rows[i]);
                        continue;
                }
                error_clear();
                if (gpu_state_read(rootfd, c, c->gpus[i].address, &rows[i].s) < 0)
                        rows[i].error = strdup(error_get(-EIO));
                else if (gpu_plan_make(&c->gpus[i], &rows[i].s, &rows[i].p) < 0 ||
                         gpu_state_offers(rootfd, c->gpus[i].address, &rows[i].s, &rows[i].offers, &rows[i].n_offers) < 0)
                        r = -ENOMEM;
        }
        if (r >= 0 && json) {
                json_object *a = json_object_new_array();

                root = json_object_new_object();
                json_object_object_add(root, "gpus", a);
                for (size_t i = 0; i < c->n_gpus; i++)
                        json_object_array_add(a, row_json(&rows[i]));
                r = cli_print_json(root);
        } else if (r >= 0 && c->n_gpus == 0)
                log_notice("no [gpu_PF] section in the config: no GPU has a declared state");
        else if (r >= 0)
                r = print_text(rows, c->n_gpus);
        for (size_t i = 0; i < c->n_gpus; i++) {
                gpu_state_done(&rows[i].s);
                gpu_plan_done(&rows[i].p);
                free(rows[i].offers);
                free((char *) rows[i].error);
        }
        return r < 0 ? cli_oom() : CLI_EXIT_OK;
}

int cli_gpu_main(int argc, char *argv[], const char *config_path) {
        CliOptions o = { .config_path = config_path };
        _cleanup_close_ int rootfd = -1;
        _cleanup_config_free_ Config *config = NULL;
        bool if_declared = false;
        const CliOption own[] = {
                { "if-declared", NULL, &if_declared },
                { NULL, NULL, NULL },
        };
        int r;

        r = cli_parse_options_own(argc, argv, CLI_OPT_ARGS | CLI_OPT_JSON, own, help, &o);
        if (r >= 0)
                return r;
        if (o.n_args < 1 || !(streq(o.args[0], "plan") || streq(o.args[0], "status")) ||
            (streq(o.args[0], "plan") && (o.n_args > 2 || o.json)) ||
            (streq(o.args[0], "status") && (o.n_args > 1 || if_declared))) {
                fputs(help, stderr);
                return CLI_EXIT_USAGE;
        }
        r = cli_open_root_config(o.config_path, &rootfd, &config);
        if (r > 0)
                return r;
        if (streq(o.args[0], "plan"))
                return plan_main(rootfd, config, o.n_args == 2 ? o.args[1] : NULL, if_declared);
        return status_main(rootfd, config, o.json);
}
