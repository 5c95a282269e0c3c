/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A [gpu_<PF>] section's keys and their values (config.h): NVIDIA's mode
 * and GPU instances, AMD's expected partition, Intel xe's VFs and each
 * VF's profile (its VRAM quota and scheduling, one value for every VF or
 * one per VF); and their checks once the whole file is read.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "amdgim.h"
#include "config-internal.h"
#include "xesriov.h"

#define MIB (1024ull * 1024ull)

/* "1g.24gb", "2g.48gb+me": a GPU instance profile as nvidia-smi names it. */
static bool gi_profile_is_valid(const char *s) {
        size_t n = strspn(s, "0123456789");

        return n > 0 && s[n] == 'g' && s[n + 1] == '.' && strlen(s) < 32 &&
               strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.+") == strlen(s);
}

static void parser_gpu_mig_instances(Parser *p, ConfigGpu *g, const char *value) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL;

        for (char *tok = copy ? strtok_r(copy, ", \t", &save) : NULL; tok; tok = strtok_r(NULL, ", \t", &save)) {
                if (!gi_profile_is_valid(tok)) {
                        parser_error(p, p->line, "'%s' is not a GPU instance profile such as 1g.24gb (nvidia-smi mig -lgip)", tok);
                        return;
                }
                if (strv_extend(&l, tok) < 0)
                        return;
        }
        strv_free(g->mig_instances);
        g->mig_instances = steal_pointer(&l);
}

/* spatial_partition = SPX | DPX | QPX | CPX: what GIM's
 * spatial_partition_mode should read; mdev-hooks checks it, never sets it. */
static void parser_gpu_spatial_partition(Parser *p, ConfigGpu *g, const char *value) {
        char *v;

        if (amdgim_partition_vfs(value) == 0) {
                parser_error(p, p->line, "spatial_partition must be SPX, DPX, QPX or CPX, not '%s'", value);
                return;
        }
        v = strdup(value);
        if (!v)
                return;
        free(g->spatial_partition);
        g->spatial_partition = v;
}

/* vfs = N: how many VFs an Intel xe PF is to have (1..4096). */
static void parser_gpu_vfs(Parser *p, ConfigGpu *g, const char *value) {
        unsigned n;

        if (safe_atou(value, &n) < 0 || n == 0 || n > 4096) {
                parser_error(p, p->line, "vfs must be a number of VFs from 1 to 4096, not '%s'", value);
                return;
        }
        g->vfs = n;
}

/* "8G", "512M", "1073741824": bytes, K M G T by 1024 (pure). -EINVAL, or
 * -ERANGE when it does not fit in 64 bits. */
int config_parse_size(const char *s, uint64_t *ret) {
        static const char units[] = "KMGT";
        unsigned long long v;
        const char *u;
        char *end;

        if (!s || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno)
                return -ERANGE;
        if (*end) {
                u = strchr(units, *end);
                if (!u || end[1] != '\0')
                        return -EINVAL;
                for (const char *i = units; i <= u; i++) {
                        if (v > UINT64_MAX / 1024)
                                return -ERANGE;
                        v *= 1024;
                }
        }
        *ret = v;
        return 0;
}

/* One value of a per-VF key: a size (vram_quota, not 0) or a u32. */
static int list_value(const char *key, const char *tok, uint64_t *ret) {
        unsigned u;

        if (streq(key, "vram_quota"))
                return config_parse_size(tok, ret) < 0 || *ret == 0 ? -EINVAL : 0;
        if (safe_atou(tok, &u) < 0)
                return -EINVAL;
        *ret = u;
        return 0;
}

/* vram_quota = SIZE[, SIZE...], exec_quantum_ms = N[, N...],
 * preempt_timeout_us = N[, N...]: an Intel GPU's VFs' profile, one value
 * for every VF or one per VF (checked against vfs once the section is
 * read, parser_check_gpus()). */
static void parser_gpu_list(Parser *p, ConfigGpuList *l, const char *key, const char *value) {
        _cleanup_free_ char *copy = strdup(value);
        _cleanup_free_ uint64_t *v = NULL;
        size_t n = 0;
        char *save = NULL;

        if (!copy)
                return;
        for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
                uint64_t x, *grown;

                if (list_value(key, tok, &x) < 0) {
                        if (streq(key, "vram_quota"))
                                parser_error(p, p->line, "vram_quota must be a size such as 8G or 512M (K, M, G, T by 1024), or one per VF separated by commas, not '%s'",
                                             tok);
                        else
                                parser_error(p, p->line, "%s must be a number from 0 (unlimited) to 4294967295, or one per VF separated by commas, not '%s'",
                                             key, tok);
                        return;
                }
                grown = realloc(v, (n + 1) * sizeof *v);
                if (!grown)
                        return;
                v = grown;
                v[n++] = x;
        }
        if (n == 0) {
                parser_error(p, p->line, "%s has no value: give one for every VF, or one per VF separated by commas", key);
                return;
        }
        free(l->v);
        *l = (ConfigGpuList) { .v = steal_pointer(&v), .n = n, .line = p->line };
}

bool parser_gpu_key_known(const char *key) {
        static char *const keys[] = { "mode", "mig_instances", "spatial_partition", "vfs", "vram_quota", "exec_quantum_ms",
                                      "preempt_timeout_us", NULL };

        return strv_contains(keys, key);
}

void parser_gpu_value(Parser *p, ConfigGpu *g, const char *key, const char *value) {
        int r;

        if (streq(key, "mig_instances"))
                parser_gpu_mig_instances(p, g, value);
        else if (streq(key, "spatial_partition"))
                parser_gpu_spatial_partition(p, g, value);
        else if (streq(key, "vfs"))
                parser_gpu_vfs(p, g, value);
        else if (streq(key, "vram_quota"))
                parser_gpu_list(p, &g->vram_quota, key, value);
        else if (streq(key, "exec_quantum_ms"))
                parser_gpu_list(p, &g->exec_quantum_ms, key, value);
        else if (streq(key, "preempt_timeout_us"))
                parser_gpu_list(p, &g->preempt_timeout_us, key, value);
        else if ((r = config_gpu_mode_from_string(value)) < 0)
                parser_error(p, p->line, "mode must be equal, mixed or mig, not '%s'", value);
        else
                g->mode = r;
}

/* --- the checks once the file is read ------------------------------------ */

/* Whether an Intel GPU's declared quotas give type (intel-xe-<MiB>). */
static bool xe_declares_type(const ConfigGpu *g, const char *type) {
        char name[64];

        for (size_t i = 0; i < g->vram_quota.n; i++) {
                snprintf(name, sizeof name, XESRIOV_TYPE_PREFIX "%llu", (unsigned long long) (g->vram_quota.v[i] / MIB));
                if (streq(name, type))
                        return true;
        }
        return false;
}

/* "intel-xe-8192, intel-xe-4096": the types its quotas give, each once. */
static void xe_declared_types(const ConfigGpu *g, char *buf, size_t size) {
        size_t o = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < g->vram_quota.n && o < size; i++) {
                char name[64];
                bool seen = false;

                snprintf(name, sizeof name, XESRIOV_TYPE_PREFIX "%llu", (unsigned long long) (g->vram_quota.v[i] / MIB));
                for (size_t k = 0; k < i; k++)
                        seen |= g->vram_quota.v[k] / MIB == g->vram_quota.v[i] / MIB;
                if (!seen)
                        o += (size_t) snprintf(buf + o, size - o, "%s%s", o ? ", " : "", name);
        }
}

/* An Intel GPU's per-VF keys: each needs vfs, and a list has one value per VF. */
static void check_xe_lists(Parser *p, const ConfigGpu *g) {
        const struct {
                const char *key;
                const ConfigGpuList *l;
        } keys[] = {
                { "vram_quota", &g->vram_quota },
                { "exec_quantum_ms", &g->exec_quantum_ms },
                { "preempt_timeout_us", &g->preempt_timeout_us },
        };

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                const ConfigGpuList *l = keys[i].l;

                if (l->n > 0 && !g->vfs)
                        parser_error(p, g->line, "[gpu_%s] has %s but no vfs: say how many VFs get it (vfs = N)", g->address,
                                     keys[i].key);
                else if (l->n > 1 && l->n != g->vfs)
                        parser_error(p, l->line, "%s lists %zu values but [gpu_%s] has vfs = %u: give one value for every VF, or one per VF",
                                     keys[i].key, l->n, g->address, g->vfs);
        }
}

/* An Intel GPU with declared quotas, listed under a type: the type is one
 * its quotas give (under several types, each one). */
static void check_xe_types(Parser *p) {
        for (size_t i = 0; i < p->n_sections; i++) {
                const TypeSection *s = &p->sections[i];

                for (size_t j = 0; j < s->n_addresses; j++) {
                        const ConfigGpu *g = config_gpu(p->config, s->addresses[j]);
                        char types[256];

                        if (!g || !g->vfs || g->vram_quota.n == 0 || xe_declares_type(g, s->type))
                                continue;
                        xe_declared_types(g, types, sizeof types);
                        parser_error(p, s->address_lines[j],
                                     "'%s' is listed under %s, but [gpu_%s] (line %u) declares VFs of %s only (vram_quota, in MiB): list it under those types, or declare a VRAM quota of that size",
                                     g->address, s->type, g->address, g->line, types);
                }
        }
}

/* mig_instances goes with mode = mig, and mode = mig needs it; an AMD
 * GPU's spatial_partition goes with neither; an Intel GPU's VFs go with
 * neither, and their profile with vfs. */
void parser_check_gpus(Parser *p) {
        const Config *c = p->config;

        for (size_t i = 0; i < c->n_gpus; i++) {
                const ConfigGpu *g = &c->gpus[i];
                bool mig = g->mode == CONFIG_GPU_MODE_MIG;

                check_xe_lists(p, g);
                if (g->vfs && (g->spatial_partition || g->mode != CONFIG_GPU_MODE_EQUAL || g->mig_instances))
                        parser_error(p, g->line, "[gpu_%s] has vfs (an Intel GPU's) and %s: keep the one of its vendor", g->address,
                                     g->spatial_partition ? "spatial_partition (an AMD GPU's)" : "mode or mig_instances (an NVIDIA GPU's)");
                else if (g->spatial_partition && (g->mode != CONFIG_GPU_MODE_EQUAL || g->mig_instances))
                        parser_error(p, g->line, "[gpu_%s] has spatial_partition (an AMD GPU's) and %s (an NVIDIA GPU's): keep the one of its vendor",
                                     g->address, g->mig_instances ? "mig_instances" : "mode");
                else if (mig && strv_length(g->mig_instances) == 0)
                        parser_error(p, g->line, "[gpu_%s] has mode = mig but no mig_instances: name the GPU instances to make (mig_instances = 1g.24gb, ...)",
                                     g->address);
                else if (!mig && g->mig_instances)
                        parser_error(p, g->line, "[gpu_%s] has mig_instances but mode = %s: GPU instances exist only in mode = mig",
                                     g->address, config_gpu_mode_to_string(g->mode));
                for (size_t k = 0; k < c->n_sriov; k++)
                        if (streq(c->sriov[k].address, g->address))
                                parser_error(p, c->sriov[k].line, "%s is in [sriov] and has [gpu_%s] (line %u): its boot plan enables its VFs in the order its mode needs; remove it from [sriov]",
                                             g->address, g->address, g->line);
        }
        check_xe_types(p);
}
