/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The record's guest index: var/lib/mdev-hooks.by-guest/<hash>/ holds one
 * empty file per mdev UUID recorded for a guest whose name has that hash.
 * ledger-index.c keeps it; the hook's program (hooks/mdev-hooks-qemu.c) looks
 * for a guest's directory on release, so that a guest whose XML no longer
 * names an mdev it still holds (hot-unplugged while running) is released
 * too. Both take the hash and the path from here.
 *
 * libc only (lib/meson.build, base_sources).
 */
#pragma once

#define GUEST_INDEX_DIR "var/lib/mdev-hooks.by-guest" /* under the root */
/* 16 hex digits plus NUL. */
#define GUEST_INDEX_HASH_MAX 17
/* GUEST_INDEX_DIR "/" <hash> plus NUL. */
#define GUEST_INDEX_PATH_MAX (sizeof GUEST_INDEX_DIR + GUEST_INDEX_HASH_MAX)

/* 16 hex digits (FNV-1a 64) of the guest name. */
void guest_index_hash(const char *guest, char out[GUEST_INDEX_HASH_MAX]);
/* The guest's directory in the index, relative to the root. */
void guest_index_path(const char *guest, char out[GUEST_INDEX_PATH_MAX]);
