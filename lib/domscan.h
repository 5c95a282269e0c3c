/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A quick, libc-only look at the domain XML for the hook's front end
 * (hooks/mdev-hooks-qemu.c), which must cost about what /bin/true costs for a
 * guest without mdevs and therefore cannot link libxml2.
 *
 * It answers one question: could this document hold an mdev hostdev? It may
 * say yes wrongly (the worker then parses the XML with libxml2 and finds
 * none), but it never says no to a document libvirt formatted with one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The same limit as domxml.h's DOMXML_MAX_SIZE (checked at build time in
 * hook.c); this header stays free of libxml2. */
#define DOMSCAN_MAX_SIZE (8u * 1024u * 1024u)

/* True if buf holds a <hostdev ...> start tag whose attributes mention
 * "mdev" (type='mdev' or type="mdev", in any attribute order or spacing).
 * buf need not be NUL-terminated. */
bool domscan_has_mdev(const char *buf, size_t len);
/* True if buf may hold a vGPU of NVIDIA's VFIO framework: a <hostdev ...>
 * start tag with managed='no' (such a VF cannot be managed by libvirt: it
 * stays bound to nvidia), or a "vgpu" element with a prefix or none
 * (<mh:vgpu ...>). An ordinary managed PCI passthrough costs nothing more.
 * buf need not be NUL-terminated. */
bool domscan_has_vgpu(const char *buf, size_t len);
