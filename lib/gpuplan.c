/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <time.h>

#include "error.h"
#include "gpuplan.h"
#include "log.h"
#include "util.h"

ENUM_IMPL(gpu_step, GpuStepKind, _GPU_STEP_MAX, "mig-on", "mig-off", "vfs", "heterogeneous-on",
          "heterogeneous-off", "gpu-instances");

void gpu_plan_done(GpuPlan *p) {
        strv_free(p->gis);
        p->gis = NULL;
}

/* The declared instances that s lacks: a multiset difference, in g's order. */
static int gis_missing(char **want, char **have, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = strv_length(have);
        _cleanup_free_ bool *used = calloc(n + 1, sizeof *used);

        if (!used)
                return -ENOMEM;
        for (char **w = want; w && *w; w++) {
                bool found = false;

                for (size_t i = 0; i < n && !found; i++)
                        if (!used[i] && streq(have[i], *w))
                                used[i] = found = true;
                if (!found && strv_extend(&l, *w) < 0)
                        return -ENOMEM;
        }
        *ret = steal_pointer(&l);
        return 0;
}

int gpu_plan_make(const ConfigGpu *g, const GpuState *s, GpuPlan *ret) {
        GpuPlan p = { .n = 0 };
        bool vfs = s->numvfs == 0;
        int r;

        if (g->mode == CONFIG_GPU_MODE_MIG && s->mig != GPU_ON)
                p.steps[p.n++] = GPU_STEP_MIG_ON;
        if (g->mode != CONFIG_GPU_MODE_MIG && s->mig == GPU_ON)
                p.steps[p.n++] = GPU_STEP_MIG_OFF;
        if (vfs)
                p.steps[p.n++] = GPU_STEP_VFS;
        /* sriov-manage -e wipes the heterogeneous mode and the instances */
        if (g->mode == CONFIG_GPU_MODE_MIXED && (vfs || s->het != GPU_ON))
                p.steps[p.n++] = GPU_STEP_HET_ON;
        if (g->mode == CONFIG_GPU_MODE_EQUAL && !vfs && s->het == GPU_ON)
                p.steps[p.n++] = GPU_STEP_HET_OFF;
        if (g->mode == CONFIG_GPU_MODE_MIG) {
                r = gis_missing(g->mig_instances, vfs ? NULL : s->gis, &p.gis);
                if (r < 0)
                        return r;
                if (p.gis)
                        p.steps[p.n++] = GPU_STEP_GIS;
        }
        *ret = p;
        return 0;
}

/* The tool and its arguments (before the PF) of each step. */
static void step_command(const Config *c, const GpuPlan *p, GpuStepKind k, const char **ret_tool, char **ret_args) {
        const char *smi = c->gpu_nvidia_smi ? c->gpu_nvidia_smi : CONFIG_GPU_NVIDIA_SMI;
        _cleanup_free_ char *list = NULL;

        *ret_tool = smi;
        switch (k) {
        case GPU_STEP_MIG_ON:
        case GPU_STEP_MIG_OFF:
                *ret_args = strdup_printf("-mig %d -i", k == GPU_STEP_MIG_ON);
                return;
        case GPU_STEP_VFS:
                *ret_tool = c->gpu_sriov_manage ? c->gpu_sriov_manage : CONFIG_GPU_SRIOV_MANAGE;
                *ret_args = strdup("-e");
                return;
        case GPU_STEP_HET_ON:
        case GPU_STEP_HET_OFF:
                *ret_args = strdup_printf("vgpu -shm %d -i", k == GPU_STEP_HET_ON);
                return;
        default:
                for (char **i = p->gis; i && *i; i++) {
                        char *l = strdup_printf("%s%s%s", strempty(list), list ? "," : "", *i);

                        free(list);
                        list = l;
                        if (!l)
                                break;
                }
                *ret_args = list ? strdup_printf("mig -cgi %s -C -i", list) : NULL;
        }
}

/* Whether the state read back after step k shows it done; if not, what it
 * shows instead. */
static const char *step_done(const ConfigGpu *g, GpuStepKind k, const GpuState *s) {
        _cleanup_strv_free_ char **missing = NULL;

        switch (k) {
        case GPU_STEP_MIG_ON:
                return s->mig == GPU_ON ? NULL : "MIG mode is not on (Ampere needs a GPU reset first: nvidia-smi -r)";
        case GPU_STEP_MIG_OFF:
                return s->mig == GPU_OFF ? NULL : "MIG mode is still on";
        case GPU_STEP_VFS:
                return s->numvfs > 0 ? NULL : "sriov_numvfs is still 0";
        case GPU_STEP_HET_ON:
                return s->het == GPU_ON ? NULL : "the heterogeneous mode is not Enabled";
        case GPU_STEP_HET_OFF:
                return s->het == GPU_OFF ? NULL : "the heterogeneous mode is not Disabled";
        default:
                if (gis_missing(g->mig_instances, s->gis, &missing) < 0)
                        return "out of memory";
                return missing ? "not every GPU instance is listed by nvidia-smi mig -lgi" : NULL;
        }
}

/* "a\nb\n" -> "a; b": a tool's output in one line (NULL: out of memory). */
static char *one_line(const char *s) {
        char *l = malloc(2 * strlen(s) + 1), *o = l;

        for (; l && *s; s++)
                if (*s != '\n')
                        *o++ = *s;
                else if (s[1]) {
                        *o++ = ';';
                        *o++ = ' ';
                }
        if (l)
                *o = '\0';
        return l;
}

/* Runs a step's tool; only sriov-manage's "Cannot obtain unbindLock" is
 * retried (an NVML client holds the GPU for a while), up to unbind_retries
 * more times, unbind_retry_ms apart. */
static int step_run(const Config *c, const GpuPlan *p, GpuStepKind k, const char *pf) {
        _cleanup_free_ char *args = NULL;
        const char *tool;
        unsigned tries = 0;
        int r;

        step_command(c, p, k, &tool, &args);
        if (!args)
                return -ENOMEM;
        for (;;) {
                GpuToolRun t = { 0 };

                tries++;
                r = gpu_tool_run(tool, args, pf, &t);
                if (r < 0)
                        return error_set(r, "GPU %s: step %s: cannot run '%s %s %s': %s", pf, gpu_step_to_string(k), tool,
                                         args, pf, error_get(r));
                if (t.exit == 0) {
                        gpu_tool_run_done(&t);
                        return 0;
                }
                _cleanup_free_ char *out = one_line(t.output);
                if (!out) {
                        gpu_tool_run_done(&t);
                        return -ENOMEM;
                }
                if (k == GPU_STEP_VFS && strstr(out, "Cannot obtain unbindLock") && tries <= c->gpu_unbind_retries) {
                        log_msg(LOG_INFO, "GPU %s: '%s %s %s': %s; trying again", pf, tool, args, pf, out);
                        gpu_tool_run_done(&t);
                        nanosleep(&(struct timespec) { .tv_sec = c->gpu_unbind_retry_ms / 1000,
                                                       .tv_nsec = (long) (c->gpu_unbind_retry_ms % 1000) * 1000000L }, NULL);
                        continue;
                }
                r = error_set(-EIO, "GPU %s: step %s failed: '%s %s %s' exited %d after %u %s: %s", pf, gpu_step_to_string(k),
                              tool, args, pf, t.exit, tries, tries == 1 ? "try" : "tries", out[0] ? out : "(no output)");
                gpu_tool_run_done(&t);
                return r;
        }
}

int gpu_plan_run(int rootfd, const Config *c, const ConfigGpu *g, unsigned *ret_changed) {
        _cleanup_(gpu_state_done) GpuState s = { 0 };
        _cleanup_(gpu_plan_done) GpuPlan p = { 0 };
        int r;

        r = gpu_state_read(rootfd, c, g->address, &s);
        if (r < 0)
                return r;
        r = gpu_plan_make(g, &s, &p);
        if (r < 0)
                return r;
        for (size_t i = 0; i < p.n; i++) {
                const char *bad;

                r = step_run(c, &p, p.steps[i], g->address);
                if (r < 0)
                        return r;
                gpu_state_done(&s);
                r = gpu_state_read(rootfd, c, g->address, &s);
                if (r < 0)
                        return r;
                bad = step_done(g, p.steps[i], &s);
                if (bad)
                        return error_set(-EIO, "GPU %s: step %s: the tool succeeded but reading back shows %s", g->address,
                                         gpu_step_to_string(p.steps[i]), bad);
                log_msg(LOG_NOTICE, "GPU %s: %s done", g->address, gpu_step_to_string(p.steps[i]));
        }
        *ret_changed = (unsigned) p.n;
        return 0;
}
