/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The boot plan's pure parts (gpustate.c, gpuplan.c): reading nvidia-smi's
 * text, and the plan itself, checked over every state a GPU can be found
 * in: the steps come in the driver's order, and once applied (by the
 * driver's rules, doc/design.md §9) leave nothing to do.
 */
#include "check.h"
#include "gpuplan.h"

static const char query_mixed[] =
        "\n==============NVSMI LOG==============\n\n"
        "GPU 00000000:41:00.0\n"
        "    MIG Mode\n"
        "        Current                           : Disabled\n"
        "        Pending                           : Enabled\n"
        "    FB Memory Usage\n"
        "        Total                             : 98304 MiB\n"
        "        Reserved                          : 0 MiB\n"
        "        Used                              : 12288 MiB\n"
        "    vGPU Device Capability\n"
        "        Heterogeneous Time-Slice Sizes    : Supported\n"
        "    vGPU Heterogeneous Mode               : Enabled\n";

static const char query_mig[] =
        "GPU 00000000:C1:00.0\n"
        "    MIG Mode\n"
        "        Current                           : Enabled\n"
        "        Pending                           : Enabled\n"
        "        Heterogeneous Time-Slice Sizes    : Not Supported\n"
        "    vGPU Heterogeneous Mode               : N/A\n";

static const char lgi[] =
        "+-------------------------------------------------------+\n"
        "| GPU instances:                                        |\n"
        "| GPU   Name             Profile  Instance   Placement  |\n"
        "|                          ID       ID       Start:Size |\n"
        "|=======================================================|\n"
        "|   0  MIG 1g.24gb          14        1          0:1     |\n"
        "|   0  MIG 2g.48gb+me        5        2          2:2     |\n"
        "+-------------------------------------------------------+\n";

static void test_parse(void) {
        GpuState s = { 0 };
        char **gis = NULL;

        gpu_state_parse_query(query_mixed, &s);
        check(s.mig == GPU_OFF && s.het == GPU_ON && s.het_capable);
        check(s.fb_total == 98304 && s.fb_used == 12288);
        gpu_state_parse_query(query_mig, &s);
        check(s.mig == GPU_ON && s.het == GPU_UNKNOWN && !s.het_capable);
        check(s.fb_total == 0 && s.fb_used == 0); /* not said */
        gpu_state_parse_query("No devices were found\n", &s);
        check(s.mig == GPU_UNKNOWN && s.het == GPU_UNKNOWN);

        unsigned *ids = NULL;

        check(gpu_state_parse_gis(lgi, &gis, &ids) == 0);
        check(ids && ids[0] == 1 && ids[1] == 2);
        free(ids);
        check(strv_length(gis) == 2 && streq(gis[0], "1g.24gb") && streq(gis[1], "2g.48gb+me"));
        strv_free(gis);
        check(gpu_state_parse_gis("No GPU instances found: Not Found\n", &gis, NULL) == 0);
        check(!gis);
}

/* What the driver does with a step (doc/design.md §9; tests/sim/sim-nvmodes.c). */
static void apply(GpuState *s, const GpuPlan *p, size_t i) {
        switch (p->steps[i]) {
        case GPU_STEP_MIG_ON:
                s->mig = GPU_ON;
                break;
        case GPU_STEP_MIG_OFF:
                s->mig = GPU_OFF;
                break;
        case GPU_STEP_VFS:
                s->numvfs = 16;
                s->het = s->mig == GPU_ON ? GPU_UNKNOWN : GPU_OFF;
                strv_free(s->gis);
                s->gis = NULL;
                break;
        case GPU_STEP_HET_ON:
        case GPU_STEP_HET_OFF:
                check(s->mig != GPU_ON);
                s->het = p->steps[i] == GPU_STEP_HET_ON ? GPU_ON : GPU_OFF;
                break;
        default:
                check(s->mig == GPU_ON && s->numvfs > 0);
                for (char **g = p->gis; *g; g++)
                        check(strv_extend(&s->gis, *g) == 0);
        }
}

static size_t step_index(const GpuPlan *p, GpuStepKind k) {
        for (size_t i = 0; i < p->n; i++)
                if (p->steps[i] == k)
                        return i;
        return SIZE_MAX;
}

static void check_one(const ConfigGpu *g, GpuState *s) {
        GpuPlan p = { 0 }, again = { 0 };
        size_t vfs;

        check(gpu_plan_make(g, s, &p) == 0);
        check(p.n <= GPU_PLAN_MAX_STEPS);
        vfs = step_index(&p, GPU_STEP_VFS);
        /* MIG mode before the VFs; the modes and instances after them */
        if (vfs != SIZE_MAX) {
                check(step_index(&p, GPU_STEP_MIG_ON) == SIZE_MAX || step_index(&p, GPU_STEP_MIG_ON) < vfs);
                check(step_index(&p, GPU_STEP_MIG_OFF) == SIZE_MAX || step_index(&p, GPU_STEP_MIG_OFF) < vfs);
                check(step_index(&p, GPU_STEP_HET_ON) == SIZE_MAX || step_index(&p, GPU_STEP_HET_ON) > vfs);
                check(step_index(&p, GPU_STEP_GIS) == SIZE_MAX || step_index(&p, GPU_STEP_GIS) > vfs);
        }
        for (size_t i = 0; i < p.n; i++)
                apply(s, &p, i);
        check(gpu_plan_make(g, s, &again) == 0);
        check(again.n == 0); /* a second run changes nothing */
        check(s->numvfs > 0);
        check((s->mig == GPU_ON) == (g->mode == CONFIG_GPU_MODE_MIG));
        if (g->mode == CONFIG_GPU_MODE_MIXED)
                check(s->het == GPU_ON);
        gpu_plan_done(&p);
        gpu_plan_done(&again);
}

static void test_every_state(void) {
        char *instances[] = { (char *) "1g.24gb", (char *) "1g.24gb", (char *) "2g.48gb", NULL };
        static const char *const found[][3] = { { NULL }, { "1g.24gb", NULL }, { "2g.48gb", "1g.24gb", NULL } };
        unsigned n = 0;

        for (int mode = 0; mode < _CONFIG_GPU_MODE_MAX; mode++)
                for (int mig = GPU_UNKNOWN; mig <= GPU_ON; mig++)
                        for (int het = GPU_UNKNOWN; het <= GPU_ON; het++)
                                for (unsigned vfs = 0; vfs <= 16; vfs += 16)
                                        for (size_t f = 0; f < ELEMENTSOF(found); f++) {
                                                ConfigGpu g = { .address = (char *) "0000:41:00.0", .mode = mode,
                                                                .mig_instances = mode == CONFIG_GPU_MODE_MIG ? instances : NULL };
                                                GpuState s = { .numvfs = vfs, .mig = mig, .het = het };

                                                for (size_t k = 0; mig == GPU_ON && found[f][k]; k++)
                                                        check(strv_extend(&s.gis, found[f][k]) == 0);
                                                check_one(&g, &s);
                                                gpu_state_done(&s);
                                                n++;
                                        }
        check(n == 3 * 3 * 3 * 2 * 3);
}

/* Instances already there are not made again; only the missing ones. */
static void test_missing_instances(void) {
        char *instances[] = { (char *) "1g.24gb", (char *) "1g.24gb", (char *) "2g.48gb", NULL };
        ConfigGpu g = { .address = (char *) "0000:c1:00.0", .mode = CONFIG_GPU_MODE_MIG, .mig_instances = instances };
        GpuState s = { .numvfs = 16, .mig = GPU_ON };
        GpuPlan p = { 0 };

        check(strv_extend(&s.gis, "1g.24gb") == 0);
        check(gpu_plan_make(&g, &s, &p) == 0);
        check(p.n == 1 && p.steps[0] == GPU_STEP_GIS);
        check(strv_length(p.gis) == 2 && streq(p.gis[0], "1g.24gb") && streq(p.gis[1], "2g.48gb"));
        gpu_plan_done(&p);
        gpu_state_done(&s);
}

int main(void) {
        test_parse();
        test_every_state();
        test_missing_instances();
        return 0;
}
