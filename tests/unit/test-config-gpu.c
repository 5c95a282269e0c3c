/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The config's GPU sections (config.c): [gpu] (the vendor tools) and
 * [gpu_<PF>] (a GPU's declared mode), the mixed-size exception to "a parent
 * serves one type", and their errors with the line they name.
 */
#include <fcntl.h>
#include <stdio.h>

#include "check.h"
#include "config-fixture.h"
#include "config.h"

static char tmpdir[] = "/tmp/test-config-gpu-XXXXXX";

static void test_defaults(void) {
        _cleanup_config_free_ Config *c = NULL;

        check(config_fixture_load("[hooks]\nrelease = remove\n", &c, NULL) == 0);
        check(c->n_gpus == 0);
        check(!c->gpu_sriov_manage && !c->gpu_nvidia_smi);
        check(c->gpu_unbind_retries == 5 && c->gpu_unbind_retry_ms == 1000);
        check(!config_gpu(c, "0000:41:00.0"));
}

static void test_sections(void) {
        _cleanup_config_free_ Config *c = NULL;
        const ConfigGpu *g;

        check(config_fixture_load("[gpu]\nsriov_manage = /opt/sm\nnvidia_smi = /opt/smi\nunbind_retries = 2\nunbind_retry_ms = 0\n"
                   "[gpu_0000:41:00.0]\nmode = mixed\n"
                   "[gpu_0000:C1:00.0]\nmode = mig\nmig_instances = 1g.24gb, 1g.24gb,2g.48gb\n"
                   "[gpu_0000:81:00.0]\n",
                   &c, NULL) == 0);
        check(streq(c->gpu_sriov_manage, "/opt/sm") && streq(c->gpu_nvidia_smi, "/opt/smi"));
        check(c->gpu_unbind_retries == 2 && c->gpu_unbind_retry_ms == 0);
        check(c->n_gpus == 3);
        g = config_gpu(c, "0000:41:00.0");
        check(g && g->mode == CONFIG_GPU_MODE_MIXED && !g->mig_instances);
        g = config_gpu(c, "0000:c1:00.0");
        check(g && g->mode == CONFIG_GPU_MODE_MIG && g->line == 8);
        check(strv_length(g->mig_instances) == 3);
        check(streq(g->mig_instances[0], "1g.24gb") && streq(g->mig_instances[2], "2g.48gb"));
        g = config_gpu(c, "0000:81:00.0");
        check(g && g->mode == CONFIG_GPU_MODE_EQUAL);
}

/* A mixed-size (or MIG) GPU may be listed under several types; an
 * equal-size one may not. */
static void test_mixed_under_several_types(void) {
        _cleanup_config_free_ Config *c = NULL;
        static const char two[] = "[devices]\nenabled_mdev_types = nvidia-1201, nvidia-1202\n"
                                  "[mdev_nvidia-1201]\ndevice_addresses = 0000:41:00.0\n"
                                  "[mdev_nvidia-1202]\ndevice_addresses = 0000:41:00.0\n";
        _cleanup_free_ char *mixed = strdup_printf("%s[gpu_0000:41:00.0]\nmode = mixed\n", two);
        _cleanup_free_ char *equal = strdup_printf("%s[gpu_0000:41:00.0]\nmode = equal\n", two);

        check(config_fixture_load(mixed, &c, NULL) == 0);
        check(config_find_type(c, "nvidia-1201") && config_find_type(c, "nvidia-1202"));
        config_fixture_expect_error(two, 6, "is listed under two types");
        config_fixture_expect_error(equal, 6, "is listed under two types");
}

static void test_errors(void) {
        config_fixture_expect_error("[gpu]\nsriov_manage = sriov-manage\n", 2, "must be an absolute path");
        config_fixture_expect_error("[gpu]\nnvidia_smi = /a\nnvidia_smi = /b\n", 3, "duplicate key 'nvidia_smi'");
        config_fixture_expect_error("[gpu]\nunbind_retries = many\n", 2, "unbind_retries must be an integer");
        config_fixture_expect_error("[gpu]\nretries = 1\n", 2, "unknown key 'retries' in [gpu]");
        config_fixture_expect_error("[gpu_41:00]\nmode = mixed\n", 1, "is not a PF's PCI address");
        config_fixture_expect_error("[gpu_0000:41:00.0]\nmode = fast\n", 2, "mode must be equal, mixed or mig, not 'fast'");
        config_fixture_expect_error("[gpu_0000:41:00.0]\nmode = mig\n", 1, "mode = mig but no mig_instances");
        config_fixture_expect_error("[gpu_0000:41:00.0]\nmig_instances = 1g.24gb\n", 1, "has mig_instances but mode = equal");
        config_fixture_expect_error("[gpu_0000:41:00.0]\nmode = mig\nmig_instances = 1g.24gb, big\n", 3,
                     "'big' is not a GPU instance profile");
        config_fixture_expect_error("[gpu_0000:41:00.0]\nmode = mixed\n[gpu_0000:41:00.0]\n", 3, "duplicate section [gpu_0000:41:00.0] (first on line 1)");
        config_fixture_expect_error("[gpu_0000:41:00.0]\nmode = mixed\nmode = mig\n", 3, "duplicate key 'mode'");
        config_fixture_expect_error("[sriov]\n0000:41:00.0 = max\n[gpu_0000:41:00.0]\nmode = mixed\n", 2,
                     "0000:41:00.0 is in [sriov] and has [gpu_0000:41:00.0] (line 3)");
}

int main(void) {
        check(mkdtemp(tmpdir));
        snprintf(config_path, sizeof config_path, "%s/mdev-hooks.conf", tmpdir);

        test_defaults();
        test_sections();
        test_mixed_under_several_types();
        test_errors();

        unlink(config_path);
        rmdir(tmpdir);
        return 0;
}
