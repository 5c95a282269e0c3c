/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A quick, libc-only look at the domain XML for the hook's program
 * (hooks/mdev-hooks-qemu.c), which must cost about what /bin/true costs for a
 * guest without mdevs and therefore loads libxml2 only when this says yes.
 *
 * It answers one question: could this document hold an mdev hostdev? It may
 * say yes wrongly (the worker then parses the XML with libxml2 and finds
 * none), but it never says no to a document in which libxml2 finds one:
 * what it cannot judge (a character reference in a hostdev tag, another
 * encoding) it hands to the worker.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The same limit as domxml.h's DOMXML_MAX_SIZE (checked at build time in
 * hook.c); this header stays free of libxml2. */
#define DOMSCAN_MAX_SIZE (8u * 1024u * 1024u)

/* False only when buf cannot hold an mdev hostdev as libxml2 reads it (the
 * worker's domxml_parse()). True if buf holds a <hostdev ...> start tag
 * whose attributes mention "mdev" (type='mdev' or type="mdev", in any
 * attribute order or spacing) or hold an '&' (a character reference such
 * as type="&#109;dev"), and for a document in an encoding where those
 * bytes need not be ASCII's (UTF-16, UCS-4, EBCDIC, or an XML declaration
 * naming anything but UTF-8, ASCII or ISO-8859-*): those go to the worker,
 * which parses them. buf need not be NUL-terminated. */
bool domscan_has_mdev(const char *buf, size_t len);
/* True if buf may hold a vGPU of NVIDIA's VFIO framework: a <hostdev ...>
 * start tag with managed='no' (such a VF cannot be managed by libvirt: it
 * stays bound to nvidia), or a "vgpu" element with a prefix or none
 * (<mh:vgpu ...>). An ordinary managed PCI passthrough costs nothing more.
 * buf need not be NUL-terminated. */
bool domscan_has_vgpu(const char *buf, size_t len);

/* The hook's read of stdin: all of fd, whatever its size, so that a
 * document is never refused for its size alone. 0 when fd holds at most max
 * bytes: all of them in a fresh NUL-terminated *ret_buf. -EFBIG when it
 * holds more: fd was still read to its end (in a bounded window), *ret_buf
 * holds its first max + 1 bytes (*ret_len = max + 1). Either way
 * *ret_may_hold is domscan_has_mdev() || domscan_has_vgpu() of all of fd. Other -errno: nothing
 * returned. */
int domscan_read_all(int fd, size_t max, char **ret_buf, size_t *ret_len, bool *ret_may_hold);
