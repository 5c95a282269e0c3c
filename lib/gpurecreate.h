/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * recreate = eager for a GPU's VFs: once its boot plan has brought an
 * NVIDIA GPU back to its declared mode (gpuplan.h), the guests' vGPUs that
 * the record holds on it are programmed again, each on its own VF with its
 * own type, as the udev helper makes an eager mdev again. Only after the
 * plan: in MIG mode a VF can take its type only once the GPU instances
 * exist.
 */
#pragma once

#include "config.h"

/* With recreate = eager: programs each guest's VF of pf that its record
 * says lost or from an earlier boot and that carries nothing now; its
 * record becomes assigned in this boot. A VF the driver refuses stays as
 * it was (logged): the guest's start programs it. *ret_made: how many. */
int gpu_recreate(int rootfd, const Config *c, const char *pf, unsigned *ret_made);
