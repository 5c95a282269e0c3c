/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "spawn.h"
#include "util.h"

#define SPAWN_LINE_MAX 1024
#define SPAWN_WAIT_STEP_USEC 10000

/* Hands the complete lines in buf[0..*len) to line_fn and keeps the rest;
 * all: the rest too (the buffer is full, or the output ended). */
static void emit_lines(SpawnLineFunc line_fn, void *userdata, char *buf, size_t *len, bool all) {
        char *start = buf, *nl;

        while ((nl = memchr(start, '\n', *len - (size_t) (start - buf)))) {
                *nl = '\0';
                if (*start && line_fn)
                        line_fn(start, userdata);
                start = nl + 1;
        }
        *len -= (size_t) (start - buf);
        memmove(buf, start, *len);
        if (all && *len > 0) {
                buf[*len] = '\0';
                if (line_fn)
                        line_fn(buf, userdata);
                *len = 0;
        }
}

/* Forks `sh -c 'command "$1"' sh arg` in a process group of its own, its
 * stdout and stderr into a pipe. Returns the child's pid, *ret_fd the read
 * end. */
static int start(const char *command, const char *arg, pid_t *ret_pid, int *ret_fd) {
        _cleanup_free_ char *script = strdup_printf("%s \"$1\"", command);
        int pipefd[2];
        pid_t pid;

        if (!script)
                return -ENOMEM;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return error_set(-errno, "cannot run '%s': %s", command, strerror(errno));
        pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return error_set(r, "cannot run '%s': %s", command, strerror(-r));
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);

                (void) setpgid(0, 0);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(pipefd[1], STDOUT_FILENO) < 0 ||
                    dup2(pipefd[1], STDERR_FILENO) < 0)
                        _exit(127);
                /* udev runs us with the event's properties only. */
                if (!getenv("PATH"))
                        (void) setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
                execl("/bin/sh", "sh", "-c", script, "sh", arg, (char *) NULL);
                _exit(127);
        }
        (void) setpgid(pid, pid);
        close(pipefd[1]);
        *ret_pid = pid;
        *ret_fd = pipefd[0];
        return 0;
}

/* Passes the output on line by line until it ends (the command and its
 * children closed it) or the deadline. Returns true if the deadline came. */
static bool read_output(int fd, unsigned long long deadline, SpawnLineFunc line_fn, void *userdata) {
        char buf[SPAWN_LINE_MAX];
        size_t len = 0;
        bool timed_out = false;

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                unsigned long long now = now_usec();
                ssize_t n;

                if (now >= deadline) {
                        timed_out = true;
                        break;
                }
                n = poll(&p, 1, (int) ((deadline - now + 999) / 1000));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        continue; /* the deadline check above ends it */
                n = read(fd, buf + len, sizeof buf - 1 - len);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0)
                        break; /* EOF */
                len += (size_t) n;
                emit_lines(line_fn, userdata, buf, &len, len >= sizeof buf - 1);
        }
        emit_lines(line_fn, userdata, buf, &len, true);
        return timed_out;
}

/* Reaps the child, giving it what is left of its time to exit, then killing
 * its process group. *timed_out is set when it was killed. */
static int reap(const char *command, pid_t pid, unsigned long long deadline, bool *timed_out, int *ret_status) {
        int status = 0;

        for (;;) {
                pid_t w = waitpid(pid, &status, WNOHANG);

                if (w == pid)
                        break;
                if (w < 0 && errno != EINTR)
                        return error_set(-errno, "cannot wait for '%s': %s", command, strerror(errno));
                if (*timed_out || now_usec() >= deadline) {
                        *timed_out = true;
                        (void) kill(-pid, SIGKILL);
                        (void) kill(pid, SIGKILL);
                        (void) waitpid(pid, &status, 0);
                        break;
                }
                usleep(SPAWN_WAIT_STEP_USEC);
        }
        if (*timed_out)
                (void) kill(-pid, SIGKILL); /* anything it left behind */
        *ret_status = status;
        return 0;
}

int spawn_shell(const char *command, const char *arg, unsigned timeout_sec,
                SpawnLineFunc line_fn, void *userdata, SpawnResult *ret) {
        unsigned long long deadline = now_usec() + (unsigned long long) timeout_sec * 1000000ULL;
        _cleanup_close_ int fd = -1;
        bool timed_out;
        int r, status = 0;
        pid_t pid = -1;

        r = start(command, arg, &pid, &fd);
        if (r < 0)
                return r;
        timed_out = read_output(fd, deadline, line_fn, userdata);
        r = reap(command, pid, deadline, &timed_out, &status);
        if (r < 0)
                return r;
        *ret = (SpawnResult) { .timed_out = timed_out, .status = status };
        return 0;
}
