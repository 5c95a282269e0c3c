/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A set of NUMA nodes: the nodes a guest's memory is pinned to (its
 * <numatune><memory nodeset=>, domxml.h), which placement prefers for its
 * vGPU (place.h). One bit per node, node n is bit n: nodes 0 to
 * NODESET_MAX - 1 only; a larger node number is left out of the set (a
 * preference, never a refusal: the guest then has no wish for that node).
 * 0, the empty set: no wish.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t NodeSet;
#define NODESET_MAX 64

static inline bool nodeset_has(NodeSet s, int node) {
        return node >= 0 && node < NODESET_MAX && (s >> node) & 1;
}

/* libvirt's node list (the syntax of <vcpu cpuset=>): numbers and ranges
 * separated by commas, "^N" taking a node out again ("0-3,^2" is 0, 1
 * and 3); blanks around each item are allowed. -EINVAL when s is not such
 * a list (then *ret is untouched). */
int nodeset_parse(const char *s, NodeSet *ret);
