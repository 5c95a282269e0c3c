/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/vm/replay-log, the VM tier's replayer of dm-log-writes logs, on logs
 * written here by hand in the kernel's format (the VM makes real ones): what
 * it lists, what each replay leaves on the target, at which entries it runs
 * its check, and that a log it cannot trust is refused.
 *
 *   test-replay-log PATH-TO-REPLAY-LOG
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <endian.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "macro.h"

#define BS 512
#define MAGIC UINT64_C(0x6a736677736872)

enum { FLUSH = 1, FUA = 2, DISCARD = 4, MARK = 8 };

static char *tool;
static char dir[] = "/tmp/test-replay-log.XXXXXX";

static void put64(unsigned char *p, uint64_t v) {
        v = htole64(v);
        memcpy(p, &v, sizeof v);
}

/* A log under construction: the super's count is written at the end. */
typedef struct Writer {
        int fd;
        off_t pos;
        uint64_t n;
} Writer;

static void entry(Writer *w, uint64_t sector, uint64_t nr, uint64_t flags, const char *mark, int fill) {
        unsigned char block[BS] = { 0 };

        put64(block, sector);
        put64(block + 8, nr);
        put64(block + 16, flags);
        put64(block + 24, mark ? strlen(mark) : 0);
        if (mark)
                memcpy(block + 32, mark, strlen(mark));
        check(pwrite(w->fd, block, BS, w->pos) == BS);
        w->pos += BS;
        if (!(flags & DISCARD))
                for (uint64_t i = 0; i < nr; i++) {
                        memset(block, fill, BS);
                        check(pwrite(w->fd, block, BS, w->pos) == BS);
                        w->pos += BS;
                }
        w->n++;
}

static void super(Writer *w, uint64_t magic, uint64_t nr_entries) {
        unsigned char block[BS] = { 0 };
        uint32_t bs = htole32(BS);

        put64(block, magic);
        put64(block + 8, 1);
        put64(block + 16, nr_entries);
        memcpy(block + 24, &bs, sizeof bs);
        check(pwrite(w->fd, block, BS, 0) == BS);
}

static char *path(const char *name) {
        char *p;

        check(asprintf(&p, "%s/%s", dir, name) > 0);
        return p;
}

/* The log every test replays:
 *   0 write 2 'A'   1 flush   2 mark m1   3 fua write 4-5 'B'
 *   4 discard 2     5 write 0 'C'
 * and a sixth write (7 'X') past the super's count, as dm-log-writes leaves
 * writes logged after its last update of the super. */
static void write_log(const char *name, uint64_t magic) {
        _cleanup_free_ char *p = path(name);
        Writer w = { .pos = BS };

        w.fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        check(w.fd >= 0);
        entry(&w, 2, 1, 0, NULL, 'A');
        entry(&w, 0, 0, FLUSH, NULL, 0);
        entry(&w, 0, 0, MARK, "m1", 0);
        entry(&w, 4, 2, FUA, NULL, 'B');
        entry(&w, 2, 1, DISCARD, NULL, 0);
        entry(&w, 0, 1, 0, NULL, 'C');
        super(&w, magic, w.n);
        entry(&w, 7, 1, 0, NULL, 'X');
        check(close(w.fd) == 0);
}

/* A fresh target of 8 blocks of 0xee. */
static void write_target(const char *name) {
        _cleanup_free_ char *p = path(name);
        unsigned char buf[8 * BS];
        int fd;

        memset(buf, 0xee, sizeof buf);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        check(fd >= 0);
        check(write(fd, buf, sizeof buf) == (ssize_t) sizeof buf);
        check(close(fd) == 0);
}

/* The first byte of each of the 8 blocks, as a string (0xee as '.', 0 as '0'). */
static void blocks(const char *name, char out[9]) {
        _cleanup_free_ char *p = path(name);
        unsigned char buf[8 * BS];
        int fd = open(p, O_RDONLY | O_CLOEXEC);

        check(fd >= 0);
        check(read(fd, buf, sizeof buf) == (ssize_t) sizeof buf);
        close(fd);
        for (int i = 0; i < 8; i++) {
                for (int j = 1; j < BS; j++)
                        check(buf[i * BS + j] == buf[i * BS]);
                out[i] = buf[i * BS] == 0xee ? '.' : buf[i * BS] == 0 ? '0' : (char) buf[i * BS];
        }
        out[8] = '\0';
}

/* Runs the tool in dir with sh -c; its exit status; stdout and stderr in files. */
static int run(const char *args) {
        _cleanup_free_ char *cmd = NULL;
        int status;

        check(asprintf(&cmd, "cd '%s' && '%s' %s > out 2> err", dir, tool, args) > 0);
        status = system(cmd);
        check(status != -1 && WIFEXITED(status));
        return WEXITSTATUS(status);
}

static char *slurp(const char *name) {
        _cleanup_free_ char *p = path(name);
        char *buf = calloc(1, 4096);
        int fd = open(p, O_RDONLY | O_CLOEXEC);

        check(buf && fd >= 0);
        check(read(fd, buf, 4095) >= 0);
        close(fd);
        return buf;
}

static void test_list(void) {
        _cleanup_free_ char *out = NULL;

        write_log("log", MAGIC);
        check(run("list log") == 0);
        out = slurp("out");
        check_streq(out, "0 write 2 1\n"
                         "1 flush 0 0\n"
                         "2 mark 0 0 m1\n"
                         "3 fua 4 2\n"
                         "4 discard 2 1\n"
                         "5 write 0 1\n");
}

static void test_replay_all_and_to(void) {
        _cleanup_free_ char *out = NULL;
        char b[9];

        write_log("log", MAGIC);
        write_target("img");
        check(run("replay log img") == 0);
        out = slurp("out");
        check_streq(out, "replayed 6 entries, 0 crash states checked\n");
        blocks("img", b);
        check_streq(b, "C.0.BB..");   /* the discard zeroed 2; 7 is past the count */

        write_target("img");
        check(run("replay log img --to 1") == 0);
        blocks("img", b);
        check_streq(b, "..A.....");
}

static void test_check_points(void) {
        _cleanup_free_ char *out = NULL, *seen = NULL;
        char b[9];

        write_log("log", MAGIC);
        write_target("img");
        /* The check sees the target as it is at its entry: keep a copy. */
        check(run("replay log img --between 1 --check "
                  "'echo $MH_REPLAY_ENTRY $MH_REPLAY_KIND >> seen && cp img img.$MH_REPLAY_ENTRY'") == 0);
        out = slurp("out");
        check_streq(out, "replayed 6 entries, 5 crash states checked\n");
        seen = slurp("seen");
        check_streq(seen, "1 between\n2 flush\n4 fua\n5 between\n6 end\n");
        blocks("img.1", b);
        check_streq(b, "..A.....");
        blocks("img.2", b);
        check_streq(b, "..A.....");
        blocks("img.4", b);
        check_streq(b, "..A.BB..");
        blocks("img.5", b);
        check_streq(b, "..0.BB..");
        blocks("img.6", b);
        check_streq(b, "C.0.BB..");
}

static void test_check_from(void) {
        _cleanup_free_ char *out = NULL, *seen = NULL;

        write_log("log", MAGIC);
        write_target("img");
        check(run("replay log img --between 1 --check-from 3 --check 'echo $MH_REPLAY_ENTRY $MH_REPLAY_KIND >> seen2'") == 0);
        out = slurp("out");
        check_streq(out, "replayed 6 entries, 3 crash states checked\n");
        seen = slurp("seen2");
        check_streq(seen, "4 fua\n5 between\n6 end\n");
}

static void test_stride(void) {
        _cleanup_free_ char *out = NULL, *seen = NULL;

        write_log("log", MAGIC);
        write_target("img");
        /* points 1 between, 2 flush, 4 fua, 5 between: the 1st and 3rd, and the end */
        check(run("replay log img --between 1 --stride 2 --check 'echo $MH_REPLAY_ENTRY $MH_REPLAY_KIND >> seen3'") == 0);
        out = slurp("out");
        check_streq(out, "replayed 6 entries, 3 crash states checked\n");
        seen = slurp("seen3");
        check_streq(seen, "1 between\n4 fua\n6 end\n");
        check(run("replay log img --stride 0 --check true") == 2);
}

static void test_failed_check_stops(void) {
        _cleanup_free_ char *err = NULL;
        char b[9];

        write_log("log", MAGIC);
        write_target("img");
        check(run("replay log img --check 'test $MH_REPLAY_ENTRY -lt 4'") == 1);
        err = slurp("err");
        check_streq(err, "replay-log: the check failed after 4 entries (fua): exit 1\n");
        blocks("img", b);
        check_streq(b, "..A.BB..");  /* nothing after the failed state */
}

static void test_bad_logs(void) {
        _cleanup_free_ char *err = NULL, *err2 = NULL, *lp = path("log");
        int fd;

        write_log("log", 0x1234);
        write_target("img");
        check(run("replay log img") == 1);
        err = slurp("err");
        check(strstr(err, "replay-log: 'log' is not a dm-log-writes log") == err);
        check(!strchr(err, '\n') || strchr(err, '\n')[1] == '\0');

        /* A count past the end of the file: refused at the missing entry,
         * after what came before it. */
        write_log("log", MAGIC);
        fd = open(lp, O_RDWR | O_CLOEXEC);
        check(fd >= 0);
        check(ftruncate(fd, 6 * BS) == 0);   /* super, 0 and its data, 1, 2, 3 without its data */
        check(close(fd) == 0);
        check(run("list log") == 1);
        err2 = slurp("err");
        check(strstr(err2, "replay-log: cannot read entry 4 of 'log'") == err2);

        check(run("replay") == 2);
        check(run("replay log img --to x") == 2);
        check(run("replay log img --to 99") == 1);
}

int main(int argc, char **argv) {
        _cleanup_free_ char *rm = NULL;

        if (argc != 2) {
                fprintf(stderr, "usage: %s PATH-TO-REPLAY-LOG\n", argv[0]);
                return 2;
        }
        tool = realpath(argv[1], NULL);
        check(tool);
        check(mkdtemp(dir));
        test_list();
        test_replay_all_and_to();
        test_check_points();
        test_check_from();
        test_stride();
        test_failed_check_stops();
        test_bad_logs();
        check(asprintf(&rm, "rm -rf '%s'", dir) > 0);
        check(system(rm) == 0);
        free(tool);
        return 0;
}
