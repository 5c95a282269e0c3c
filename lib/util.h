/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Validation, strict number parsing, small file I/O relative to a dirfd,
 * string vectors and the root prefix. The error message is error.h, included
 * here for every caller.
 *
 * This file must stay free of libxml2, libudev, inih and json-c: the hook's
 * program (hooks/mdev-hooks-qemu.c), which links libc alone, links it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "macro.h"

/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" plus NUL. */
#define UUID_STRING_MAX 37
/* Parent and type names: sysfs directory entries, bounded well below NAME_MAX. */
#define NAME_STRING_MAX 128
/* libvirt allows long domain names; we keep what fits in one record line. */
#define GUEST_NAME_MAX 256

/* --- numbers, UUIDs, names ---------------------------------------------- */

/* FNV-1a (32 bits) of s, going on from h: FNV1A32_INIT for a new hash. For
 * the hook's small hash tables, not for anything stored. */
#define FNV1A32_INIT 2166136261u
static inline uint32_t fnv1a32(uint32_t h, const char *s) {
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * 16777619u;
        return h;
}

/* Decimal, no sign, no spaces except one trailing newline, fits in unsigned. */
int safe_atou(const char *s, unsigned *ret);
/* The value of an ASCII hex digit (either case), -1 for any other byte:
 * isxdigit() without the locale's table. */
int hex_digit_value(char c);

/* 8-4-4-4-12 hex digits, either case. */
bool uuid_is_valid(const char *s);
/* Lower-cases a valid UUID into out. */
void uuid_normalize(const char *s, char out[UUID_STRING_MAX]);
/* A parent or type name that is safe as one path component:
 * [A-Za-z0-9._:+-]{1,127}, and not "." or "..". */
bool name_is_valid(const char *s);

/* Nova's limit on a resource class name (nova.conf [mdev_*] mdev_class). */
#define MDEV_CLASS_MAX 255
/* An mdev_class, in the config and in a domain's metadata alike: "VGPU" or
 * "CUSTOM_[A-Z0-9_]+", at most MDEV_CLASS_MAX characters (Nova's
 * [mdev_*] mdev_class option: its regex and its max_length). */
bool mdev_class_is_valid(const char *s);

/* --- files relative to a dirfd ----------------------------------------- */

/* Reads fd to its end into buf, at most size-1 bytes, and NUL-terminates it;
 * *ret_len (may be NULL) is the length. A short read counts as the end:
 * sysfs hands out an attribute in one read (systemd's read_virtual_file
 * relies on it too), and for a small regular file it means EOF. This saves
 * a second read per file, a round trip each on FUSE. Not for pipes: use
 * read_fd_full(). -EFBIG if it does not fit. */
int read_fd_small(int fd, char *buf, size_t size, size_t *ret_len);
/* Makes room for one more element at the end of the array *array points
 * to (n in use, *allocated slots of size bytes), doubling it; *array and
 * *allocated are updated. -ENOMEM leaves both as they were. */
int array_grow(void *array, size_t n, size_t *allocated, size_t size);

/* read(2), again on EINTR: the bytes read, 0 at the end, or -errno. */
ssize_t read_eintr(int fd, void *buf, size_t size);
/* write(2) until all of buf is written, again on EINTR: 0, or -errno (-EIO
 * when write(2) writes nothing). */
int write_full(int fd, const void *buf, size_t size);
/* Reads fd (a pipe too) into a fresh NUL-terminated buffer up to its end or
 * max + 1 bytes, whichever comes first: *ret_len > max says there is more
 * (left unread). -EINVAL for a max too large to count one further. */
int read_fd_upto(int fd, size_t max, char **ret_buf, size_t *ret_len);
/* Reads all of fd (a pipe too) into a fresh NUL-terminated buffer, at most
 * max bytes. -EFBIG when there is more. */
int read_fd_full(int fd, size_t max, char **ret_buf, size_t *ret_len);
/* Reads a small file (at most size-1 bytes, read_fd_small()), NUL-terminates
 * it and strips one trailing newline. -EFBIG if it does not fit. */
int read_small_at(int dirfd, const char *path, char *buf, size_t size);
/* Same into a fresh allocation. */
int read_line_at(int dirfd, const char *path, char **ret);
/* One write(2) of s to an existing file (sysfs attribute). Returns the raw
 * -errno of open or write, so callers can tell EEXIST from ENOSPC. */
int write_string_at(int dirfd, const char *path, const char *s);
/* mkdir -p relative to dirfd, mode for the directories it creates. */
int mkdir_p_at(int dirfd, const char *path, unsigned mode);

/* --- the root prefix (doc/design.md §3) ------------------------------------ */

/* Opens $MDEV_HOOKS_ROOT, or "/" when unset or empty, as an O_PATH|O_DIRECTORY
 * fd. Every absolute path the programs use is then opened relative to it,
 * written without the leading slash: "sys/class/mdev_bus". */
int root_open(int *ret_fd);
/* /proc/sys/kernel/random/boot_id under the root. */
int boot_id_read(int rootfd, char ret[UUID_STRING_MAX]);

/* --- string vectors (NULL-terminated char *[]) ------------------------- */

void strv_free(char **l);
static inline void strv_freep(char ***l) {
        strv_free(*l);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)
size_t strv_length(char * const *l);
/* Appends a copy of s. */
int strv_extend(char ***l, const char *s);
/* Appends s itself, taking ownership (freed on failure). */
int strv_consume(char ***l, char *s);
/* As strv_consume(), for a list built in a loop: *n is its length and
 * *allocated its slots, so that nothing is counted and the list grows by
 * doubling (strv_consume() counts the list on every call). Start with
 * NULL, 0, 0. */
int strv_push(char ***l, size_t *n, size_t *allocated, char *s);
/* Makes a NULL list (nothing pushed) the empty list, for callers that hand
 * out a list that is never NULL. */
int strv_ensure(char ***l);
bool strv_contains(char * const *l, const char *s);
/* The strings with sep between them ("a, b, c"); "" for an empty or NULL
 * list. NULL when out of memory. */
char *strv_join(char * const *l, const char *sep);
void strv_sort(char **l);
/* Whether each string is greater than the one before (strcmp()). */
bool strv_is_sorted_unique(char * const *l);
/* Entries of a directory relative to dirfd, without "." and "..", sorted.
 * -ENOENT if the directory does not exist. */
int dir_list_at(int dirfd, const char *path, char ***ret);

/* --- misc ------------------------------------------------------------- */

char *strdup_printf(const char *fmt, ...) _printf_(1, 2);
/* The directory of the running program (/proc/self/exe without its last
 * component), without a trailing slash. -errno with error_set(). */
int program_dir(char *buf, size_t size);
/* CLOCK_MONOTONIC in microseconds. */
unsigned long long now_usec(void);
