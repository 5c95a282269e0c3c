/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The values of a [gpu_<PF>] section's keys (config.h): NVIDIA's GPU
 * instances, AMD's expected partition. config.c says which keys there are.
 */
#include <stdio.h>

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
