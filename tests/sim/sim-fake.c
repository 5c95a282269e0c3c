/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: a kind of VF that no driver has, for the tests' fake
 * backend (lib/backend-fake.c, built with -Dcrashpoints=true): a PF
 * ("fakevf PF-ADDRESS totalvfs=N types=SET framebuffer=MiB" in a topology)
 * whose VFs carry one vGPU each through <VF>/fakegpu/current_type and list
 * what they can take in <VF>/fakegpu/creatable_types. It behaves as
 * NVIDIA's VFs do (sim-vfio.c: one framebuffer size per GPU, the same
 * errnos): only its names differ, so that a test proves that a new kind of
 * device is a new backend and nothing else.
 */
#include "sim.h"

const VfModel vf_model_fake = {
        .statement = "fakevf",
        .driver = "fakegpu",
        .vendor = "0x1234",
        .dir = "fakegpu",
        .creatable = "creatable_types",
        .current = "current_type",
        .info = false,
        .pf_driver = "nvidia",
        .pf_vendor = "0x10de",
};
