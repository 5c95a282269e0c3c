/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A type's size from its name, a GPU instance's from its profile, and how
 * many more vGPUs fit in each mode (gpucapacity.c).
 */
#include <errno.h>

#include "check.h"
#include "gpucapacity.h"

static void test_sizes(void) {
        unsigned mib, slices;

        check(gpu_type_size("NVIDIA L40S-4Q", &mib, &slices) == 0 && mib == 4096 && slices == 0);
        check(gpu_type_size("NVIDIA L40S-48C", &mib, &slices) == 0 && mib == 49152 && slices == 0);
        check(gpu_type_size("NVIDIA RTX Pro 6000 Blackwell DC-1-24Q", &mib, &slices) == 0 && mib == 24576 && slices == 1);
        check(gpu_type_size("NVIDIA H200X-1-18C", &mib, &slices) == 0 && mib == 18432 && slices == 1);
        check(gpu_type_size("NVIDIA A100-3-20C", &mib, &slices) == 0 && mib == 20480 && slices == 3);
        check(gpu_type_size("NVIDIA A100-40C", &mib, &slices) == 0 && mib == 40960 && slices == 0);
        check(gpu_type_size("GRID M60-0B", &mib, &slices) == -EINVAL);
        check(gpu_type_size("Q", &mib, &slices) == -EINVAL);
        check(gpu_type_size("NVIDIA L40S", &mib, &slices) == -EINVAL);
        check(gpu_type_size("", &mib, &slices) == -EINVAL);

        check(gpu_instance_size("1g.24gb", &slices, &mib) == 0 && slices == 1 && mib == 24576);
        check(gpu_instance_size("2g.48gb+me", &slices, &mib) == 0 && slices == 2 && mib == 49152);
        check(gpu_instance_size("g.24gb", &slices, &mib) == -EINVAL);
        check(gpu_instance_size("1g.gb", &slices, &mib) == -EINVAL);
}

static void test_time_sliced(void) {
        GpuCapacityInput eq = { .free_vfs = 16, .fb_total = 49152 };

        check(gpu_capacity(&eq, 1150, 4096, 0) == 12);
        check(gpu_capacity(&eq, 1155, 8192, 0) == 6);
        /* one 4Q fixes the size: 11 more 4Q, no 8Q */
        eq.vgpus = 1, eq.fb_used = 4096, eq.free_vfs = 15;
        check(gpu_capacity(&eq, 1150, 4096, 0) == 11);
        check(gpu_capacity(&eq, 1155, 8192, 0) == 0);
        /* mixed: the framebuffer left */
        GpuCapacityInput mx = { .mixed = true, .free_vfs = 14, .fb_total = 49152, .fb_used = 12288, .vgpus = 2 };
        check(gpu_capacity(&mx, 1155, 8192, 0) == 4);
        check(gpu_capacity(&mx, 1150, 4096, 0) == 9);
        /* never more than the free VFs */
        mx.free_vfs = 3;
        check(gpu_capacity(&mx, 1150, 4096, 0) == 3);
        /* MIG-backed types need MIG on */
        check(gpu_capacity(&mx, 1301, 24576, 1) == 0);
}

static void test_mig(void) {
        GpuInstanceUse gis[] = {
                { .slices = 1, .mib = 24576 },
                { .slices = 1, .mib = 24576, .vgpus = 1, .vgpu_type = 1302 },
                { .slices = 2, .mib = 49152 },
        };
        GpuCapacityInput in = { .mig = true, .free_vfs = 15, .gis = gis, .n_gis = 3, .vgpus = 1 };

        check(gpu_capacity(&in, 1302, 8192, 1) == 3 + 2);  /* an empty 1g: 3; the other holds one of 3 */
        check(gpu_capacity(&in, 1301, 24576, 1) == 1);     /* only the empty 1g */
        check(gpu_capacity(&in, 1311, 49152, 2) == 1);
        check(gpu_capacity(&in, 1201, 4096, 0) == 0);      /* time-sliced: not with MIG on */
        in.n_gis = 0;
        check(gpu_capacity(&in, 1302, 8192, 1) == 0);      /* no instance: nothing */
}

int main(void) {
        test_sizes();
        test_time_sliced();
        test_mig();
        return 0;
}
