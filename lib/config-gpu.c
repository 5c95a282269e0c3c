/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The values of a [gpu_<PF>] section's keys (config.h): NVIDIA's GPU
 * instances, AMD's expected partition, Intel xe's VFs and their VRAM
 * quota. config.c says which keys there are.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "amdgim.h"
#include "config-internal.h"

/* "1g.24gb", "2g.48gb+me": a GPU instance profile as nvidia-smi names it. */
static bool gi_profile_is_valid(const char *s) {
        size_t n = strspn(s, "0123456789");

        return n > 0 && s[n] == 'g' && s[n + 1] == '.' && strlen(s) < 32 &&
               strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.+") == strlen(s);
}

void parser_gpu_mig_instances(Parser *p, ConfigGpu *g, const char *value) {
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
void parser_gpu_spatial_partition(Parser *p, ConfigGpu *g, const char *value) {
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
void parser_gpu_vfs(Parser *p, ConfigGpu *g, const char *value) {
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

/* vram_quota = SIZE: each VF's VRAM quota (with vfs). */
void parser_gpu_vram_quota(Parser *p, ConfigGpu *g, const char *value) {
        uint64_t v;

        if (config_parse_size(value, &v) < 0 || v == 0) {
                parser_error(p, p->line, "vram_quota must be a size such as 8G or 512M (K, M, G, T by 1024), not '%s'", value);
                return;
        }
        g->vram_quota = v;
}
