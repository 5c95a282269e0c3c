/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A GPU's declared state beyond NVIDIA's modes (issue 37): an AMD GPU's
 * [gpu_<PF>] spatial_partition as the config reads it, and how the
 * partition read from GIM is compared with it (amdgim_partition_check());
 * an Intel GPU's vfs and vram_quota, and the sizes they are written in.
 */
#include <fcntl.h>
#include <stdio.h>

#include "amdgim.h"
#include "check.h"
#include "config-fixture.h"
#include "config.h"
#include "xesriov.h"

static char tmpdir[] = "/tmp/test-gpu-declared-XXXXXX";

static void test_spatial_partition_read(void) {
        _cleanup_config_free_ Config *c = NULL;

        check(config_fixture_load("[gpu_0000:c1:00.0]\nspatial_partition = CPX\n[gpu_0000:41:00.0]\nmode = mixed\n", &c, NULL) == 0);
        check_streq(config_gpu(c, "0000:c1:00.0")->spatial_partition, "CPX");
        check(config_gpu(c, "0000:c1:00.0")->mode == CONFIG_GPU_MODE_EQUAL);
        check(!config_gpu(c, "0000:41:00.0")->spatial_partition);
}

static void test_spatial_partition_errors(void) {
        config_fixture_expect_error("[gpu_0000:c1:00.0]\nspatial_partition = cpx\n", 2, "spatial_partition must be SPX, DPX, QPX or CPX, not 'cpx'");
        config_fixture_expect_error("[gpu_0000:c1:00.0]\nspatial_partition = NPS4\n", 2, "not 'NPS4'");
        config_fixture_expect_error("[gpu_0000:c1:00.0]\nspatial_partition = CPX\nspatial_partition = DPX\n", 3, "spatial_partition");
        config_fixture_expect_error("[gpu_0000:c1:00.0]\nspatial_partition = CPX\nmode = mig\nmig_instances = 1g.24gb\n", 1,
                     "has spatial_partition (an AMD GPU's) and mig_instances");
        config_fixture_expect_error("[gpu_0000:c1:00.0]\nmode = mixed\nspatial_partition = CPX\n", 1, "and mode (an NVIDIA GPU's)");
        config_fixture_expect_error("[gpu_0000:c1:00.0]\npartition = CPX\n", 2, "unknown key 'partition' in [gpu_0000:c1:00.0]");
}

static void test_partition_vfs(void) {
        check(amdgim_partition_vfs("SPX") == 1);
        check(amdgim_partition_vfs("DPX") == 2);
        check(amdgim_partition_vfs("QPX") == 4);
        check(amdgim_partition_vfs("CPX") == 8);
        check(amdgim_partition_vfs("cpx") == 0);
        check(amdgim_partition_vfs("") == 0);
        check(amdgim_partition_vfs(NULL) == 0);
}

static void test_partition_check(void) {
        AmdgimPartition p = { .nvfs = 8, .spatial = "CPX", .memory = "NPS1", .model = "MI300X" };
        char buf[512] = "";

        check(amdgim_partition_check("0000:c1:00.0", &p, "CPX", buf, sizeof buf) == 0);
        check(buf[0] == '\0');
        check(amdgim_partition_check("0000:c1:00.0", &p, "DPX", buf, sizeof buf) == 1);
        check_streq(buf, "GPU 0000:c1:00.0 is partitioned CPX (8 VFs), not DPX as [gpu_0000:c1:00.0] declares: "
                         "mdev-hooks never changes a partition; set it with amd-smi and reload gim, or change spatial_partition");
        p.nvfs = 4;
        check(amdgim_partition_check("0000:c1:00.0", &p, "CPX", buf, sizeof buf) == 1);
        check_streq(buf, "GPU 0000:c1:00.0 is partitioned CPX but has 4 VFs, not the 8 of CPX: reload gim, which makes them as it loads");
        /* Another model's counts are not known: only the mode is compared. */
        snprintf(p.model, sizeof p.model, "0x7461");
        check(amdgim_partition_check("0000:c1:00.0", &p, "CPX", buf, sizeof buf) == 0);
        p.spatial[0] = '\0';
        check(amdgim_partition_check("0000:c1:00.0", &p, "CPX", buf, sizeof buf) == 1);
        check(strstr(buf, "spatial_partition_mode cannot be read"));
        check(!strchr(buf, '\n'));
}

static void test_xe_keys(void) {
        _cleanup_config_free_ Config *c = NULL;
        const ConfigGpu *g;

        check(config_fixture_load("[gpu_0000:03:00.0]\nvfs = 3\nvram_quota = 6G\n[gpu_0000:05:00.0]\nvfs = 2\n", &c, NULL) == 0);
        g = config_gpu(c, "0000:03:00.0");
        check(g->vfs == 3 && g->vram_quota.n == 1 && g->vram_quota.v[0] == 6ull << 30);
        g = config_gpu(c, "0000:05:00.0");
        check(g->vfs == 2 && g->vram_quota.n == 0 && !g->vram_quota.v);
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 0\n", 2, "vfs must be a number of VFs from 1 to 4096, not '0'");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 2\nvram_quota = 8GB\n", 3, "vram_quota must be a size such as 8G");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvram_quota = 8G\n", 1, "has vram_quota but no vfs");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 2\nspatial_partition = CPX\n", 1, "has vfs (an Intel GPU's) and spatial_partition");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 2\nmode = mixed\n", 1, "has vfs (an Intel GPU's) and mode or mig_instances");
}

/* VF k's value of a per-VF key: one for every VF, or its own. */
static uint64_t vf_value(const ConfigGpuList *l, unsigned k) {
        uint64_t v = 12345;

        check(config_gpu_list_get(l, k, &v));
        return v;
}

/* vram_quota, exec_quantum_ms, preempt_timeout_us: one value for every VF,
 * or one per VF in order, with the line of the key. */
static void test_xe_lists(void) {
        _cleanup_config_free_ Config *c = NULL;
        const ConfigGpu *g;
        uint64_t v = 7;

        check(config_fixture_load("[gpu_0000:03:00.0]\nvfs = 4\nvram_quota = 8G, 8G, 4G,4G\nexec_quantum_ms = 20\n"
                   "preempt_timeout_us = 500000, 0, 100, 200\n",
                   &c, NULL) == 0);
        g = config_gpu(c, "0000:03:00.0");
        check(g->vram_quota.n == 4 && g->vram_quota.line == 3);
        check(vf_value(&g->vram_quota, 1) == 8ull << 30 && vf_value(&g->vram_quota, 2) == 8ull << 30);
        check(vf_value(&g->vram_quota, 3) == 4ull << 30 && vf_value(&g->vram_quota, 4) == 4ull << 30);
        /* one value: every VF's */
        check(g->exec_quantum_ms.n == 1);
        for (unsigned k = 1; k <= 4; k++)
                check(vf_value(&g->exec_quantum_ms, k) == 20);
        check(vf_value(&g->preempt_timeout_us, 1) == 500000 && vf_value(&g->preempt_timeout_us, 2) == 0);
        check(vf_value(&g->preempt_timeout_us, 4) == 200);
        check(!config_gpu_list_get(&g->preempt_timeout_us, 5, &v) && v == 7);
        check(!config_gpu_list_get(&g->preempt_timeout_us, 0, &v) && v == 7);
}

static void test_xe_list_errors(void) {
        /* a list whose length is not vfs: its own line */
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 4\nvram_quota = 8G, 8G, 4G\n", 3,
                     "vram_quota lists 3 values but [gpu_0000:03:00.0] has vfs = 4: give one value for every VF, or one per VF");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nexec_quantum_ms = 10, 20\nvfs = 3\n", 2, "exec_quantum_ms lists 2 values but [gpu_0000:03:00.0] has vfs = 3");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 2\npreempt_timeout_us = 1,2,3\n", 3, "preempt_timeout_us lists 3 values");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 2\nvram_quota = 8G, 0\n", 3, "vram_quota must be a size such as 8G or 512M (K, M, G, T by 1024), or one per VF separated by commas, not '0'");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 2\nexec_quantum_ms = 4294967296\n", 3,
                     "exec_quantum_ms must be a number from 0 (unlimited) to 4294967295, or one per VF separated by commas, not '4294967296'");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 2\npreempt_timeout_us = -1\n", 3, "preempt_timeout_us must be a number from 0");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 2\nexec_quantum_ms = ,\n", 3, "exec_quantum_ms has no value");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nexec_quantum_ms = 20\n", 1, "[gpu_0000:03:00.0] has exec_quantum_ms but no vfs");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 2\nexec_quantum_ms = 1\nexec_quantum_ms = 2\n", 4, "duplicate key 'exec_quantum_ms'");
        config_fixture_expect_error("[gpu_0000:03:00.0]\nvfs = 2\nsched_priority = low\n", 3, "unknown key 'sched_priority' in [gpu_0000:03:00.0]");
}

/* An Intel GPU with VFs of two quotas serves two types; under a type its
 * quotas do not give, or under two without quotas, it is an error. */
static void test_xe_two_types(void) {
        static const char two[] = "[devices]\nenabled_mdev_types = intel-xe-8192, intel-xe-4096\n"
                                  "[mdev_intel-xe-8192]\ndevice_addresses = 0000:03:00.0\n"
                                  "[mdev_intel-xe-4096]\ndevice_addresses = 0000:03:00.0\n";
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_free_ char *mixed = strdup_printf("%s[gpu_0000:03:00.0]\nvfs = 4\nvram_quota = 8G, 8G, 4G, 4G\n", two);
        _cleanup_free_ char *one = strdup_printf("%s[gpu_0000:03:00.0]\nvfs = 4\nvram_quota = 8G\n", two);
        _cleanup_free_ char *none = strdup_printf("%s[gpu_0000:03:00.0]\nvfs = 4\n", two);
        const ConfigType *types[4];

        check(config_fixture_load(mixed, &c, NULL) == 0);
        check(config_parent_types(c, "0000:03:00.0", types, 4) == 2);
        check_streq(types[0]->name, "intel-xe-8192");
        check_streq(types[1]->name, "intel-xe-4096");
        config_fixture_expect_error(one, 6, "'0000:03:00.0' is listed under intel-xe-4096, but [gpu_0000:03:00.0] (line 7) declares VFs of intel-xe-8192 only (vram_quota, in MiB)");
        config_fixture_expect_error(none, 6, "'0000:03:00.0' is listed under two types, intel-xe-8192 (line 4) and intel-xe-4096, but [gpu_0000:03:00.0] (line 7) declares no vram_quota");
        /* and an NVIDIA GPU of one size still serves one type */
        config_fixture_expect_error("[devices]\nenabled_mdev_types = nvidia-1, nvidia-2\n[mdev_nvidia-1]\ndevice_addresses = 0000:41:00.0\n"
                     "[mdev_nvidia-2]\ndevice_addresses = 0000:41:00.0\n",
                     6, "is listed under two types");
}

static void test_sizes(void) {
        uint64_t v = 7;
        char buf[32];

        check(config_parse_size("8G", &v) == 0 && v == 8ull << 30);
        check(config_parse_size("512M", &v) == 0 && v == 512ull << 20);
        check(config_parse_size("1T", &v) == 0 && v == 1ull << 40);
        check(config_parse_size("4K", &v) == 0 && v == 4096);
        check(config_parse_size("1073741824", &v) == 0 && v == 1ull << 30);
        v = 7;
        check(config_parse_size("8g", &v) == -EINVAL && v == 7);
        check(config_parse_size("8GB", &v) == -EINVAL);
        check(config_parse_size("-1", &v) == -EINVAL);
        check(config_parse_size("", &v) == -EINVAL);
        check(config_parse_size("99999999999T", &v) == -ERANGE);
        check(config_parse_size("99999999999999999999", &v) == -ERANGE);
        xesriov_format_size(8ull << 30, buf, sizeof buf);
        check_streq(buf, "8G");
        xesriov_format_size(1536ull << 20, buf, sizeof buf);
        check_streq(buf, "1536M");
        xesriov_format_size(1000, buf, sizeof buf);
        check_streq(buf, "1000");
        xesriov_format_size(0, buf, sizeof buf);
        check_streq(buf, "0");
}

int main(void) {
        check(mkdtemp(tmpdir));
        snprintf(config_path, sizeof config_path, "%s/mdev-hooks.conf", tmpdir);
        test_spatial_partition_read();
        test_spatial_partition_errors();
        test_partition_vfs();
        test_partition_check();
        test_xe_keys();
        test_xe_lists();
        test_xe_list_errors();
        test_xe_two_types();
        test_sizes();
        unlink(config_path);
        rmdir(tmpdir);
        return 0;
}
