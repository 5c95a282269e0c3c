/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A GPU's declared state beyond NVIDIA's modes (issue 37): an AMD GPU's
 * [gpu_<PF>] spatial_partition as the config reads it, and how the
 * partition read from GIM is compared with it (amdgim_partition_check()).
 */
#include <fcntl.h>
#include <stdio.h>

#include "amdgim.h"
#include "check.h"
#include "config.h"

static char tmpdir[] = "/tmp/test-gpu-declared-XXXXXX";
static char path[256];

static int load(const char *text, Config **ret, char ***ret_errors) {
        int fd;

        unlink(path);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        check(fd >= 0);
        check(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
        return config_load(-1, path, ret, ret_errors);
}

/* The config is refused with an error on line that says what. */
static void expect_error(const char *text, unsigned line, const char *what) {
        char **errors = NULL, prefix[300];
        Config *c = NULL;
        bool found = false;

        check(load(text, &c, &errors) == -EINVAL);
        snprintf(prefix, sizeof prefix, "%s:%u: ", path, line);
        for (char **e = errors; e && *e; e++)
                found |= strncmp(*e, prefix, strlen(prefix)) == 0 && strstr(*e, what);
        if (!found) {
                fprintf(stderr, "expected line %u: '%s'; got:\n", line, what);
                for (char **e = errors; e && *e; e++)
                        fprintf(stderr, "  %s\n", *e);
                abort();
        }
        strv_free(errors);
}

static void test_spatial_partition_read(void) {
        _cleanup_config_free_ Config *c = NULL;

        check(load("[gpu_0000:c1:00.0]\nspatial_partition = CPX\n[gpu_0000:41:00.0]\nmode = mixed\n", &c, NULL) == 0);
        check_streq(config_gpu(c, "0000:c1:00.0")->spatial_partition, "CPX");
        check(config_gpu(c, "0000:c1:00.0")->mode == CONFIG_GPU_MODE_EQUAL);
        check(!config_gpu(c, "0000:41:00.0")->spatial_partition);
}

static void test_spatial_partition_errors(void) {
        expect_error("[gpu_0000:c1:00.0]\nspatial_partition = cpx\n", 2, "spatial_partition must be SPX, DPX, QPX or CPX, not 'cpx'");
        expect_error("[gpu_0000:c1:00.0]\nspatial_partition = NPS4\n", 2, "not 'NPS4'");
        expect_error("[gpu_0000:c1:00.0]\nspatial_partition = CPX\nspatial_partition = DPX\n", 3, "spatial_partition");
        expect_error("[gpu_0000:c1:00.0]\nspatial_partition = CPX\nmode = mig\nmig_instances = 1g.24gb\n", 1,
                     "has spatial_partition (an AMD GPU's) and mig_instances");
        expect_error("[gpu_0000:c1:00.0]\nmode = mixed\nspatial_partition = CPX\n", 1, "and mode (an NVIDIA GPU's)");
        expect_error("[gpu_0000:c1:00.0]\npartition = CPX\n", 2, "(known: mode, mig_instances, spatial_partition)");
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

int main(void) {
        check(mkdtemp(tmpdir));
        snprintf(path, sizeof path, "%s/mdev-hooks.conf", tmpdir);
        test_spatial_partition_read();
        test_spatial_partition_errors();
        test_partition_vfs();
        test_partition_check();
        unlink(path);
        rmdir(tmpdir);
        return 0;
}
