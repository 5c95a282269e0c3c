/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The small helpers that replace copies (util.c): reading to the end of a
 * file or a pipe, joining a list, and finding the program's own directory.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>

#include "check.h"
#include "util.h"

static int pipe_with(const char *text, size_t len) {
        int p[2];

        check(pipe2(p, O_CLOEXEC) == 0);
        check(write(p[1], text, len) == (ssize_t) len);
        close(p[1]);
        return p[0];
}

static void test_read_fd_full(void) {
        _cleanup_free_ char *buf = NULL;
        char big[70000];
        size_t len;
        int fd;

        /* A pipe that delivers more than one read's worth. */
        memset(big, 'x', sizeof big);
        fd = pipe_with(big, 60000);
        check(read_fd_full(fd, 65536, &buf, &len) == 0);
        check(len == 60000 && buf[len] == '\0' && buf[0] == 'x' && buf[len - 1] == 'x');
        close(fd);
        free(steal_pointer(&buf));

        fd = pipe_with(big, 60000);
        check(read_fd_full(fd, 59999, &buf, &len) == -EFBIG);
        close(fd);

        fd = pipe_with("", 0);
        check(read_fd_full(fd, 10, &buf, &len) == 0);
        check(len == 0 && buf[0] == '\0');
        close(fd);
}

/* read_fd_upto() stops one byte past max and leaves the rest unread. */
static void test_read_fd_upto(void) {
        _cleanup_free_ char *buf = NULL;
        char big[40000], rest[16];
        size_t len;
        int fd;

        memset(big, 'y', sizeof big);
        fd = pipe_with(big, sizeof big);
        check(read_fd_upto(fd, 30000, &buf, &len) == 0);
        check(len == 30001 && buf[len] == '\0');
        check(read(fd, rest, sizeof rest) == sizeof rest); /* still there */
        close(fd);
        free(steal_pointer(&buf));

        fd = pipe_with(big, 100);
        check(read_fd_upto(fd, 100, &buf, &len) == 0);
        check(len == 100);
        close(fd);
        check(read_fd_upto(0, SIZE_MAX - 1, &buf, &len) == -EINVAL);
}

/* array_grow() doubles only when the array is full and keeps the elements. */
static void test_array_grow(void) {
        _cleanup_free_ unsigned *a = NULL;
        size_t n = 0, allocated = 0;

        for (unsigned i = 0; i < 100; i++) {
                size_t before = allocated;

                check(array_grow(&a, n, &allocated, sizeof *a) == 0);
                check(allocated > n);
                check(n < before ? allocated == before : allocated == (before ? before * 2 : 4));
                a[n++] = i;
        }
        for (unsigned i = 0; i < 100; i++)
                check(a[i] == i);
}

static void test_read_fd_small(void) {
        char tmpl[] = "/tmp/test-util-XXXXXX", buf[8];
        size_t len;
        int fd;

        fd = mkostemp(tmpl, O_CLOEXEC);
        check(fd >= 0);
        check(unlink(tmpl) == 0);
        check(write(fd, "16\n", 3) == 3);
        check(lseek(fd, 0, SEEK_SET) == 0);
        check(read_fd_small(fd, buf, sizeof buf, &len) == 0);
        check(len == 3 && streq(buf, "16\n"));
        /* Exactly the size: no room for the NUL. */
        check(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0);
        check(write(fd, "12345678", 8) == 8 && lseek(fd, 0, SEEK_SET) == 0);
        check(read_fd_small(fd, buf, sizeof buf, NULL) == -EFBIG);
        close(fd);
}

static void test_strv_join(void) {
        char *l[] = { (char *) "nvidia-35", (char *) "nvidia-36", (char *) "nvidia-37", NULL };
        char *one[] = { (char *) "mtty-1", NULL };
        char *none[] = { NULL };
        _cleanup_free_ char *a = strv_join(l, ", "), *b = strv_join(one, ", ");
        _cleanup_free_ char *c = strv_join(none, ", "), *d = strv_join(NULL, ", ");

        check_streq(a, "nvidia-35, nvidia-36, nvidia-37");
        check_streq(b, "mtty-1");
        check_streq(c, "");
        check_streq(d, "");
}

static void test_strv_is_sorted_unique(void) {
        char *in_order[] = { (char *) "0000:01:00.0", (char *) "0000:02:00.0", (char *) "0000:af:00.0", NULL };
        char *repeated[] = { (char *) "0000:01:00.0", (char *) "0000:02:00.0", (char *) "0000:02:00.0", NULL };
        char *reversed[] = { (char *) "0000:02:00.0", (char *) "0000:01:00.0", NULL };
        char *one[] = { (char *) "mtty", NULL };
        char *none[] = { NULL };

        check(strv_is_sorted_unique(in_order));
        check(!strv_is_sorted_unique(repeated));
        check(!strv_is_sorted_unique(reversed));
        check(strv_is_sorted_unique(one));
        check(strv_is_sorted_unique(none));
        check(strv_is_sorted_unique(NULL));
}

static void test_program_dir(void) {
        char dir[PATH_MAX], self[PATH_MAX], small[4];
        ssize_t n;

        check(program_dir(dir, sizeof dir) == 0);
        n = readlink("/proc/self/exe", self, sizeof self - 1);
        check(n > 0);
        self[n] = '\0';
        check(strncmp(self, dir, strlen(dir)) == 0);
        check_streq(self + strlen(dir), "/test-util");
        check(program_dir(small, sizeof small) == -ENAMETOOLONG);
}

int main(void) {
        test_read_fd_full();
        test_read_fd_upto();
        test_array_grow();
        test_read_fd_small();
        test_strv_join();
        test_strv_is_sorted_unique();
        test_program_dir();
        return 0;
}
