/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `prepare begin` without libxml2, in the front end itself
 * (prepare-lite.c).
 */
#pragma once

#include "domdata.h"

/* argv as libvirt gave it (argc >= 3, argv[2] "prepare"), and what
 * domlite_parse() read of the domain XML, which it takes over (and frees
 * with domlite_free()). Returns the hook's exit status. */
int prepare_lite(int argc, char **argv, Domxml *dom);
