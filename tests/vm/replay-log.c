/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * replay-log: replays a dm-log-writes log onto a device, stopping at the
 * crash states a power cut could leave, for the VM tier's power-loss tests
 * (tests/vm/README.md, "Power loss"). xfstests' replay-log is not packaged
 * in Debian; this is the part of it those tests need, written from the
 * log's format (the kernel's Documentation/admin-guide/device-mapper/
 * log-writes.rst and drivers/md/dm-log-writes.c):
 *
 *   block 0          the super: magic, version 1, the number of entries,
 *                    the block size ("sectorsize", the logical block size of
 *                    the logged device); little endian
 *   then per entry   one block: sector, nr_sectors, flags, data_len (each a
 *                    le64; sector and nr_sectors count blocks of sectorsize),
 *                    followed by a mark's text in the same block; then, for
 *                    a write that is not a discard, its nr_sectors blocks of
 *                    data
 *
 * Entries are in the order the writes completed, a flush after what it
 * flushed. Usage:
 *
 *   replay-log list LOG
 *       one line per entry: INDEX FLAGS SECTOR COUNT [MARK], FLAGS a comma
 *       list of flush, fua, discard, mark, meta, or "write"
 *   replay-log replay LOG TARGET [--to N] [--check CMD] [--between K]
 *                    [--check-from M] [--stride S]
 *       writes entries 0 .. N-1 (all by default) to TARGET (a file or a
 *       block device) in order, discards as zeros. With --check, TARGET is
 *       flushed and CMD run (sh -c) after each entry that is a flush or a
 *       FUA write, after every K-th write between two of them (--between,
 *       default 0: none), and after the last entry, from entry M on
 *       (--check-from: the states before it, such as a half-made file
 *       system, are written but not checked), and of those only every S-th
 *       (--stride, default 1: each; the last entry's state is always
 *       checked), with MH_REPLAY_ENTRY
 *       (the number of entries written) and MH_REPLAY_KIND (flush, fua,
 *       between or end) in its environment. The first CMD that fails stops
 *       the replay. Prints "replayed E entries, C crash states checked".
 *
 * Exit: 0 done (every check passed), 1 a check failed or the log or the
 * target could not be read or written (the reason on stderr), 2 bad usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOG_FLUSH_FLAG (1u << 0)
#define LOG_FUA_FLAG (1u << 1)
#define LOG_DISCARD_FLAG (1u << 2)
#define LOG_MARK_FLAG (1u << 3)
#define LOG_METADATA_FLAG (1u << 4)
#define LOG_KNOWN_FLAGS (LOG_FLUSH_FLAG | LOG_FUA_FLAG | LOG_DISCARD_FLAG | LOG_MARK_FLAG | LOG_METADATA_FLAG)

#define WRITE_LOG_MAGIC UINT64_C(0x6a736677736872)
#define WRITE_LOG_VERSION 1

#define SUPER_SIZE 28 /* magic, version, nr_entries (le64), sectorsize (le32) */
#define ENTRY_SIZE 32 /* sector, nr_sectors, flags, data_len (le64) */

typedef struct Log {
        const char *path;
        int fd;
        uint32_t blocksize;
        uint64_t nr_entries;
        uint64_t next;     /* index of the next entry */
        uint64_t pos;      /* its offset in the log */
} Log;

typedef struct Entry {
        uint64_t sector, nr_sectors, flags, data_len;
        char mark[4096];
        uint64_t data_pos; /* offset of its data in the log */
} Entry;

static uint64_t le64_at(const unsigned char *p) {
        uint64_t v;

        memcpy(&v, p, sizeof v);
        return le64toh(v);
}

static uint32_t le32_at(const unsigned char *p) {
        uint32_t v;

        memcpy(&v, p, sizeof v);
        return le32toh(v);
}

/* Reads exactly n bytes at off: -errno, or -ENODATA where the file ends. */
static int pread_full(int fd, void *buf, size_t n, uint64_t off) {
        size_t done = 0;

        while (done < n) {
                ssize_t k = pread(fd, (char *) buf + done, n - done, (off_t) (off + done));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -ENODATA;
                done += (size_t) k;
        }
        return 0;
}

static int pwrite_full(int fd, const void *buf, size_t n, uint64_t off) {
        size_t done = 0;

        while (done < n) {
                ssize_t k = pwrite(fd, (const char *) buf + done, n - done, (off_t) (off + done));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                done += (size_t) k;
        }
        return 0;
}

static const char *errstr(int r) {
        return r == -ENODATA ? "the file ends there" : strerror(-r);
}

static int log_open(const char *path, Log *ret) {
        unsigned char super[SUPER_SIZE];
        uint64_t magic, version;
        uint32_t bs;
        int fd, r;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                fprintf(stderr, "replay-log: cannot open the log '%s': %s\n", path, strerror(-r));
                return r;
        }
        r = pread_full(fd, super, sizeof super, 0);
        if (r < 0) {
                fprintf(stderr, "replay-log: cannot read the super block of '%s': %s\n", path, errstr(r));
                close(fd);
                return r;
        }
        magic = le64_at(super);
        version = le64_at(super + 8);
        bs = le32_at(super + 24);
        if (magic != WRITE_LOG_MAGIC || version != WRITE_LOG_VERSION) {
                fprintf(stderr, "replay-log: '%s' is not a dm-log-writes log (magic %#" PRIx64 ", version %" PRIu64
                        "; expected %#" PRIx64 ", %d)\n", path, magic, version, WRITE_LOG_MAGIC, WRITE_LOG_VERSION);
                close(fd);
                return -EINVAL;
        }
        if (bs < 512 || bs > 65536 || (bs & (bs - 1)) != 0) {
                fprintf(stderr, "replay-log: '%s' names a block size of %" PRIu32 " bytes, not a power of two from 512 to 65536\n",
                        path, bs);
                close(fd);
                return -EINVAL;
        }
        *ret = (Log) {
                .path = path,
                .fd = fd,
                .blocksize = bs,
                .nr_entries = le64_at(super + 16),
                .next = 0,
                .pos = bs,
        };
        return 0;
}

/* The next entry's header (and a mark's text); its data stays in the log. */
static int log_next(Log *log, Entry *e) {
        unsigned char *block;
        int r;

        block = malloc(log->blocksize);
        if (!block) {
                fprintf(stderr, "replay-log: out of memory\n");
                return -ENOMEM;
        }
        r = pread_full(log->fd, block, log->blocksize, log->pos);
        if (r < 0) {
                fprintf(stderr, "replay-log: cannot read entry %" PRIu64 " of '%s' at byte %" PRIu64 ": %s\n",
                        log->next, log->path, log->pos, errstr(r));
                free(block);
                return r;
        }
        e->sector = le64_at(block);
        e->nr_sectors = le64_at(block + 8);
        e->flags = le64_at(block + 16);
        e->data_len = le64_at(block + 24);
        e->mark[0] = '\0';
        r = -EINVAL;
        if (e->flags & ~(uint64_t) LOG_KNOWN_FLAGS)
                fprintf(stderr, "replay-log: entry %" PRIu64 " of '%s' has unknown flags %#" PRIx64 "\n",
                        log->next, log->path, e->flags);
        else if ((e->flags & LOG_MARK_FLAG) &&
                 (e->data_len > log->blocksize - ENTRY_SIZE || e->data_len >= sizeof e->mark))
                fprintf(stderr, "replay-log: entry %" PRIu64 " of '%s' is a mark of %" PRIu64 " bytes, more than its block holds\n",
                        log->next, log->path, e->data_len);
        else if (!(e->flags & LOG_MARK_FLAG) && e->data_len != 0)
                fprintf(stderr, "replay-log: entry %" PRIu64 " of '%s' carries inline data (a DAX write), which this tool does not replay\n",
                        log->next, log->path);
        else if (e->nr_sectors > (UINT64_MAX / 2) / log->blocksize || e->sector > (UINT64_MAX / 2) / log->blocksize)
                fprintf(stderr, "replay-log: entry %" PRIu64 " of '%s' names sectors beyond any device (%" PRIu64 " + %" PRIu64 ")\n",
                        log->next, log->path, e->sector, e->nr_sectors);
        else
                r = 0;
        if (r < 0) {
                free(block);
                return r;
        }
        if (e->flags & LOG_MARK_FLAG) {
                memcpy(e->mark, block + ENTRY_SIZE, e->data_len);
                e->mark[e->data_len] = '\0';
        }
        free(block);
        e->data_pos = log->pos + log->blocksize;
        log->pos = e->data_pos;
        if (!(e->flags & LOG_DISCARD_FLAG))
                log->pos += e->nr_sectors * log->blocksize;
        log->next++;
        return 0;
}

static void flags_string(uint64_t flags, char *buf, size_t size) {
        static const struct {
                uint64_t flag;
                const char *name;
        } names[] = {
                { LOG_FLUSH_FLAG, "flush" }, { LOG_FUA_FLAG, "fua" }, { LOG_DISCARD_FLAG, "discard" },
                { LOG_MARK_FLAG, "mark" },   { LOG_METADATA_FLAG, "meta" },
        };
        size_t len = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                if (flags & names[i].flag)
                        len += (size_t) snprintf(buf + len, size - len, "%s%s", len ? "," : "", names[i].name);
        if (len == 0)
                snprintf(buf, size, "write");
}

static int cmd_list(const char *logpath) {
        Log log;
        Entry e;
        char flags[64];
        int r;

        r = log_open(logpath, &log);
        if (r < 0)
                return 1;
        while (log.next < log.nr_entries) {
                uint64_t index = log.next;

                r = log_next(&log, &e);
                if (r < 0)
                        break;
                flags_string(e.flags, flags, sizeof flags);
                if (e.flags & LOG_MARK_FLAG)
                        printf("%" PRIu64 " %s %" PRIu64 " %" PRIu64 " %s\n", index, flags, e.sector, e.nr_sectors, e.mark);
                else
                        printf("%" PRIu64 " %s %" PRIu64 " %" PRIu64 "\n", index, flags, e.sector, e.nr_sectors);
        }
        close(log.fd);
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "replay-log: cannot write the list: %s\n", strerror(errno));
                return 1;
        }
        return r < 0 ? 1 : 0;
}

/* Copies (or, for a discard, zeroes) one entry's blocks onto the target. */
static int entry_apply(const Log *log, const Entry *e, int target, const char *targetpath, uint64_t index) {
        size_t chunk = 1u << 20;
        uint64_t left = e->nr_sectors * log->blocksize, off = e->sector * log->blocksize, src = e->data_pos;
        char *buf;
        int r = 0;

        if (left == 0)
                return 0;
        buf = calloc(1, chunk);
        if (!buf) {
                fprintf(stderr, "replay-log: out of memory\n");
                return -ENOMEM;
        }
        while (left > 0 && r == 0) {
                size_t n = left < chunk ? (size_t) left : chunk;

                if (!(e->flags & LOG_DISCARD_FLAG)) {
                        r = pread_full(log->fd, buf, n, src);
                        if (r < 0) {
                                fprintf(stderr, "replay-log: cannot read the data of entry %" PRIu64 " of '%s': %s\n",
                                        index, log->path, errstr(r));
                                break;
                        }
                }
                r = pwrite_full(target, buf, n, off);
                if (r < 0)
                        fprintf(stderr, "replay-log: cannot write entry %" PRIu64 " to '%s' at byte %" PRIu64 ": %s\n",
                                index, targetpath, off, strerror(-r));
                left -= n, off += n, src += n;
        }
        free(buf);
        return r;
}

/* Flushes the target and runs the check: 0 it passed, 1 it failed, -errno. */
static int run_check(const char *cmd, int target, const char *targetpath, uint64_t applied, const char *kind) {
        char n[32];
        pid_t pid;
        int status;

        if (fsync(target) < 0) {
                int r = -errno;

                fprintf(stderr, "replay-log: cannot flush '%s': %s\n", targetpath, strerror(-r));
                return r;
        }
        snprintf(n, sizeof n, "%" PRIu64, applied);
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                int r = -errno;

                fprintf(stderr, "replay-log: cannot fork the check: %s\n", strerror(-r));
                return r;
        }
        if (pid == 0) {
                if (setenv("MH_REPLAY_ENTRY", n, 1) < 0 || setenv("MH_REPLAY_KIND", kind, 1) < 0)
                        _exit(127);
                execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
                _exit(127);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        int r = -errno;

                        fprintf(stderr, "replay-log: cannot wait for the check: %s\n", strerror(-r));
                        return r;
                }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        fprintf(stderr, "replay-log: the check failed after %s entries (%s): %s %d\n", n, kind,
                WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return 1;
}

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

static int usage(void) {
        fprintf(stderr, "usage: replay-log list LOG\n"
                        "       replay-log replay LOG TARGET [--to N] [--check CMD] [--between K] [--check-from M] [--stride S]\n");
        return 2;
}

static int cmd_replay(int argc, char **argv) {
        const char *logpath = argv[0], *targetpath = argv[1], *check = NULL;
        uint64_t to = UINT64_MAX, between = 0, from = 0, stride = 1, checks = 0, since_flush = 0, points = 0;
        Log log;
        Entry e;
        int target, r = 0;

        for (int i = 2; i < argc; i += 2) {
                if (i + 1 >= argc)
                        return usage();
                if (strcmp(argv[i], "--to") == 0 && parse_u64(argv[i + 1], &to) == 0)
                        continue;
                if (strcmp(argv[i], "--between") == 0 && parse_u64(argv[i + 1], &between) == 0)
                        continue;
                if (strcmp(argv[i], "--check-from") == 0 && parse_u64(argv[i + 1], &from) == 0)
                        continue;
                if (strcmp(argv[i], "--stride") == 0 && parse_u64(argv[i + 1], &stride) == 0 && stride > 0)
                        continue;
                if (strcmp(argv[i], "--check") == 0 && argv[i + 1][0] != '\0') {
                        check = argv[i + 1];
                        continue;
                }
                fprintf(stderr, "replay-log: bad option '%s %s'\n", argv[i], argv[i + 1]);
                return usage();
        }
        if (log_open(logpath, &log) < 0)
                return 1;
        if (to != UINT64_MAX && to > log.nr_entries) {
                fprintf(stderr, "replay-log: --to %" PRIu64 ": '%s' has only %" PRIu64 " entries\n", to, logpath, log.nr_entries);
                close(log.fd);
                return 1;
        }
        if (to == UINT64_MAX)
                to = log.nr_entries;
        target = open(targetpath, O_WRONLY | O_CLOEXEC);
        if (target < 0) {
                fprintf(stderr, "replay-log: cannot open the target '%s': %s\n", targetpath, strerror(errno));
                close(log.fd);
                return 1;
        }
        while (r == 0 && log.next < to) {
                uint64_t index = log.next;
                const char *kind = NULL;

                r = log_next(&log, &e);
                if (r < 0)
                        break;
                if (e.flags & LOG_MARK_FLAG)
                        continue;
                r = entry_apply(&log, &e, target, targetpath, index);
                if (r < 0 || !check)
                        continue;
                if (e.flags & LOG_FLUSH_FLAG)
                        kind = "flush";
                else if (e.flags & LOG_FUA_FLAG)
                        kind = "fua";
                else if (between > 0 && ++since_flush % between == 0)
                        kind = "between";
                if (kind && log.next < to && index >= from && points++ % stride == 0) {
                        r = run_check(check, target, targetpath, log.next, kind);
                        checks++;
                }
                if (e.flags & (LOG_FLUSH_FLAG | LOG_FUA_FLAG))
                        since_flush = 0;
        }
        if (r == 0 && check) {
                r = run_check(check, target, targetpath, log.next, "end");
                checks++;
        }
        if (r == 0 && fsync(target) < 0) {
                r = -errno;
                fprintf(stderr, "replay-log: cannot flush '%s': %s\n", targetpath, strerror(-r));
        }
        if (close(target) < 0 && r == 0) {
                fprintf(stderr, "replay-log: cannot close '%s': %s\n", targetpath, strerror(errno));
                r = -EIO;
        }
        close(log.fd);
        if (r == 0)
                printf("replayed %" PRIu64 " entries, %" PRIu64 " crash states checked\n", log.next, checks);
        return r == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
        if (argc == 3 && strcmp(argv[1], "list") == 0)
                return cmd_list(argv[2]);
        if (argc >= 4 && strcmp(argv[1], "replay") == 0)
                return cmd_replay(argc - 2, argv + 2);
        return usage();
}
