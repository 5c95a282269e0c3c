/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/wait.h>

#include "error.h"
#include "gpucapacity.h"
#include "gpustate.h"
#include "spawn.h"
#include "util.h"
#include "vfio.h"

void gpu_state_done(GpuState *s) {
        strv_free(s->gis);
        s->gis = NULL;
        free(s->gi_ids);
        s->gi_ids = NULL;
}

void gpu_tool_run_done(GpuToolRun *t) {
        free(t->output);
        t->output = NULL;
}

typedef struct Collect {
        char *text;
        size_t len;
        bool oom;
} Collect;

static void collect_line(const char *line, void *userdata) {
        Collect *c = userdata;
        size_t n = strlen(line);
        char *t;

        if (c->oom || c->len > 64 * 1024)
                return;
        t = realloc(c->text, c->len + n + 2);
        if (!t) {
                c->oom = true;
                return;
        }
        c->text = t;
        memcpy(c->text + c->len, line, n);
        c->len += n;
        c->text[c->len++] = '\n';
        c->text[c->len] = '\0';
}

int gpu_tool_run(const char *tool, const char *args, const char *pf, GpuToolRun *ret) {
        _cleanup_free_ char *command = NULL;
        Collect c = { 0 };
        SpawnResult res;
        int r;

        if (strchr(tool, '\''))
                return error_set(-EINVAL, "the tool's path '%s' has a quote in it: fix [gpu] in the config", tool);
        command = strdup_printf("'%s' %s", tool, args);
        if (!command)
                return -ENOMEM;
        r = spawn_shell(command, pf, GPU_TOOL_TIMEOUT, collect_line, &c, &res);
        if (r < 0 || c.oom) {
                free(c.text);
                return r < 0 ? r : -ENOMEM;
        }
        *ret = (GpuToolRun) {
                .exit = !res.timed_out && WIFEXITED(res.status) ? WEXITSTATUS(res.status) : -1,
                .output = c.text ? c.text : strdup(""),
        };
        return ret->output ? 0 : -ENOMEM;
}

/* "    Key      : Value": the value of the first line whose key is key. */
static const char *query_value(const char *text, const char *key, char *buf, size_t size) {
        for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                const char *k = l + strspn(l, " \t"), *colon, *end;

                if (strncmp(k, key, strlen(key)) != 0)
                        continue;
                colon = strchr(k, ':');
                end = strchr(k, '\n');
                if (!colon || (end && colon > end))
                        continue;
                colon += 1 + strspn(colon + 1, " \t");
                snprintf(buf, size, "%.*s", (int) (end ? end - colon : (ptrdiff_t) strlen(colon)), colon);
                return buf;
        }
        return NULL;
}

static GpuTristate tristate(const char *v) {
        return !v ? GPU_UNKNOWN : streq(v, "Enabled") ? GPU_ON : streq(v, "Disabled") ? GPU_OFF : GPU_UNKNOWN;
}

void gpu_state_parse_query(const char *text, GpuState *s) {
        const char *mig = strstr(text, "MIG Mode"), *fb;
        char buf[64];

        /* "MIG Mode" then its "Current" line */
        s->mig = mig ? tristate(query_value(mig, "Current", buf, sizeof buf)) : GPU_UNKNOWN;
        s->het = tristate(query_value(text, "vGPU Heterogeneous Mode", buf, sizeof buf));
        s->het_capable = streq_ptr(query_value(text, "Heterogeneous Time-Slice Sizes", buf, sizeof buf), "Supported");
        fb = strstr(text, "FB Memory Usage");
        if (!fb || !query_value(fb, "Total", buf, sizeof buf) || sscanf(buf, "%u MiB", &s->fb_total) != 1)
                s->fb_total = 0;
        if (!fb || !query_value(fb, "Used", buf, sizeof buf) || sscanf(buf, "%u MiB", &s->fb_used) != 1)
                s->fb_used = 0;
}

int gpu_state_parse_gis(const char *text, char ***ret, unsigned **ret_ids) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ unsigned *ids = NULL;
        size_t n_ids = 0;

        /* "|   0  MIG 1g.24gb   14   1   0:1   |" */
        for (const char *m = strstr(text, " MIG "); m; m = strstr(m + 1, " MIG ")) {
                char profile[32];
                size_t n;

                m += 5;
                n = strcspn(m, " \t\n|");
                if (n == 0 || n >= sizeof profile)
                        continue;
                snprintf(profile, sizeof profile, "%.*s", (int) n, m);
                if (strv_extend(&l, profile) < 0)
                        return -ENOMEM;
                /* then the profile ID and the instance ID */
                unsigned profile_id = 0, id = 0, *t = reallocarray(ids, n_ids + 1, sizeof *ids);
                if (!t)
                        return -ENOMEM;
                ids = t;
                ids[n_ids++] = sscanf(m + n, "%u %u", &profile_id, &id) == 2 ? id : 0;
        }
        *ret = steal_pointer(&l);
        if (ret_ids)
                *ret_ids = steal_pointer(&ids);
        return 0;
}

static int read_vfs(int rootfd, const char *pf, GpuState *s) {
        _cleanup_strv_free_ char **vfs = NULL;
        char path[128], buf[32];
        int r;

        snprintf(path, sizeof path, "sys/bus/pci/devices/%s/sriov_numvfs", pf);
        r = read_small_at(rootfd, path, buf, sizeof buf);
        if (r < 0)
                return error_set(r, "cannot read /%s: %s (is %s an SR-IOV GPU?)", path, strerror(-r), pf);
        buf[strcspn(buf, "\n")] = '\0';
        if (safe_atou(buf, &s->numvfs) < 0)
                return error_set(-EBADMSG, "/%s holds '%s', not a number", path, buf);
        if (s->numvfs == 0 || vfio_pf_vfs(rootfd, pf, &vfs) < 0)
                return 0;
        for (char **v = vfs; *v && !s->vgpus; v++) {
                unsigned cur = 0;

                if (vfio_vf_current(&vfio_nvidia, rootfd, *v, &cur) >= 0 && cur)
                        s->vgpus = true;
        }
        return 0;
}

int gpu_state_read(int rootfd, const Config *c, const char *pf, GpuState *ret) {
        const char *smi = c->gpu_nvidia_smi ? c->gpu_nvidia_smi : CONFIG_GPU_NVIDIA_SMI;
        GpuState s = { .mig = GPU_UNKNOWN, .het = GPU_UNKNOWN };
        GpuToolRun t = { 0 };
        int r;

        r = read_vfs(rootfd, pf, &s);
        if (r < 0)
                return r;
        r = gpu_tool_run(smi, "-q -i", pf, &t);
        if (r < 0)
                return error_set(r, "cannot run '%s -q -i %s': %s", smi, pf, error_get(r));
        if (t.exit == 0)
                gpu_state_parse_query(t.output, &s);
        gpu_tool_run_done(&t);
        if (s.mig == GPU_ON) {
                r = gpu_tool_run(smi, "mig -lgi -i", pf, &t);
                if (r < 0)
                        return error_set(r, "cannot run '%s mig -lgi -i %s': %s", smi, pf, error_get(r));
                r = t.exit == 0 ? gpu_state_parse_gis(t.output, &s.gis, &s.gi_ids) : 0; /* exit 6: none */
                gpu_tool_run_done(&t);
                if (r < 0)
                        return r;
        }
        *ret = s;
        return 0;
}

/* A programmed VF counts in its GPU instance (MIG: gpu_instance_id). */
static void vf_in_instance(int rootfd, const char *vf, const GpuState *s, GpuInstanceUse *gis, unsigned type) {
        char path[128], buf[32];
        unsigned id;

        snprintf(path, sizeof path, "sys/bus/pci/devices/%s/%s/gpu_instance_id", vf, vfio_nvidia.dir);
        if (!s->gi_ids || read_small_at(rootfd, path, buf, sizeof buf) < 0 || safe_atou(buf, &id) < 0)
                return;
        for (size_t i = 0; s->gis && s->gis[i]; i++)
                if (s->gi_ids[i] == id) {
                        gis[i].vgpus++;
                        gis[i].vgpu_type = type;
                }
}

/* Adds what a free VF lists to the offers, each type once. */
static int offers_add(int rootfd, const char *vf, GpuOffer **l, size_t *n) {
        _cleanup_free_ VfioType *c = NULL;
        size_t n_c = 0;

        if (vfio_vf_creatable(&vfio_nvidia, rootfd, vf, &c, &n_c) < 0) {
                error_clear();
                return 0;
        }
        for (size_t i = 0; i < n_c; i++) {
                bool seen = false;
                GpuOffer *t;

                for (size_t k = 0; k < *n && !seen; k++)
                        seen = (*l)[k].id == c[i].id;
                if (seen)
                        continue;
                t = reallocarray(*l, *n + 1, sizeof **l);
                if (!t)
                        return -ENOMEM;
                *l = t;
                t = &t[(*n)++];
                *t = (GpuOffer) { .id = c[i].id };
                snprintf(t->type, sizeof t->type, "%s", c[i].type);
                snprintf(t->name, sizeof t->name, "%s", c[i].name);
        }
        return 0;
}

int gpu_state_offers(int rootfd, const char *pf, const GpuState *s, GpuOffer **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **vfs = NULL;
        _cleanup_free_ GpuOffer *l = NULL;
        _cleanup_free_ GpuInstanceUse *gis = calloc(strv_length(s->gis) + 1, sizeof *gis);
        GpuCapacityInput in = { .mig = s->mig == GPU_ON, .mixed = s->het == GPU_ON, .fb_total = s->fb_total,
                                .fb_used = s->fb_used, .gis = gis, .n_gis = strv_length(s->gis) };
        size_t n = 0;
        int r;

        if (!gis)
                return -ENOMEM;
        for (size_t i = 0; i < in.n_gis; i++)
                if (gpu_instance_size(s->gis[i], &gis[i].slices, &gis[i].mib) < 0)
                        gis[i] = (GpuInstanceUse) { 0 };
        if (s->numvfs > 0 && vfio_pf_vfs(rootfd, pf, &vfs) < 0)
                error_clear();
        for (char **v = vfs; v && *v; v++) {
                unsigned cur = 0;

                if (vfio_vf_current(&vfio_nvidia, rootfd, *v, &cur) < 0) {
                        error_clear();
                        continue;
                }
                if (cur) {
                        in.vgpus++;
                        vf_in_instance(rootfd, *v, s, gis, cur);
                        continue;
                }
                in.free_vfs++;
                r = offers_add(rootfd, *v, &l, &n);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                unsigned mib, slices;

                l[i].sized = gpu_type_size(l[i].name, &mib, &slices) >= 0;
                l[i].free = l[i].sized ? gpu_capacity(&in, l[i].id, mib, slices) : 0;
        }
        *ret = steal_pointer(&l);
        *ret_n = n;
        return 0;
}
