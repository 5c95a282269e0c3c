/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/timeit: starts programs the way libvirt and udev do (posix_spawn, the
 * domain XML or nothing on stdin) and measures each run from just before the
 * spawn to the return of wait4(): what the caller waits for. Built by
 * bench/run with the system compiler; it is not part of the project's build.
 *
 *   timeit rr ROUNDS WARMUP JOBFILE [BUDGET [GROUP]]
 *      Runs the jobs one after the other, in file order, ROUNDS + WARMUP
 *      times (round robin, so that commands compared with each other share
 *      the machine's state); with BUDGET (seconds, 0: none), stops after the
 *      first measured round that ends past it. With GROUP, the jobs are
 *      groups of GROUP in file order (the last may be shorter: a prepare
 *      and its release, say), run in a new order every round (shuffled,
 *      the same sequence every run), jobs within a group in order: a build
 *      compared with another is not always the one that runs first, nor
 *      always the one after mdevctl (either measured 4-5% slower, the same
 *      build against itself). Prints one line per measured run, <job> its
 *      line in the file:
 *          <job> <ns> <maxrss_kb> <status> <cpu_ns>
 *   timeit par JOBFILE
 *      Starts every job at once, then waits for all. Prints one line per job
 *      as above (its own time, from the first spawn to its end), then
 *          total <ns>
 *      from the first spawn to the end of the last job.
 *   timeit readloop N FILE
 *      open + read + close of FILE, N times; prints the median ns of one
 *      (the cost of one sysfs attribute read, to compare the simulator with
 *      the kernel's sysfs).
 *
 * JOBFILE: one job per line, fields separated by TAB:
 *      <stdin file or -> [NAME=value ...] <absolute program path> [args ...]
 * '-' means /dev/null. stdout goes to /dev/null, stderr is inherited.
 * <status> is the exit code, or 128+signal; <cpu_ns> the child's user + system
 * CPU time (not the simulator's, which serves it from another process).
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef struct Job {
        char *in;
        char **argv;
        char **envp;
} Job;

static void die(const char *what) {
        perror(what);
        exit(2);
}

static void *xrealloc(void *p, size_t n) {
        p = realloc(p, n);
        if (!p)
                die("realloc");
        return p;
}

static long long now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int is_assignment(const char *s) {
        const char *eq = strchr(s, '=');
        if (!eq || eq == s || s[0] == '/')
                return 0;
        for (const char *p = s; p < eq; p++)
                if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
                        return 0;
        return 1;
}

static size_t load_jobs(const char *path, Job **ret) {
        FILE *f = fopen(path, "re");
        if (!f)
                die(path);
        size_t nenv = 0;
        while (environ[nenv])
                nenv++;

        Job *jobs = NULL;
        size_t n = 0;
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, f)) >= 0) {
                if (len > 0 && line[len - 1] == '\n')
                        line[--len] = 0;
                if (len == 0 || line[0] == '#')
                        continue;
                Job j = { 0 };
                size_t na = 0, ne = 0;
                j.envp = xrealloc(NULL, (nenv + 1) * sizeof(char *));
                int field = 0;
                for (char *save = NULL, *tok = strtok_r(line, "\t", &save); tok;
                     tok = strtok_r(NULL, "\t", &save), field++) {
                        tok = strdup(tok);
                        if (!tok)
                                die("strdup");
                        if (field == 0)
                                j.in = tok;
                        else if (na == 0 && is_assignment(tok)) {
                                j.envp = xrealloc(j.envp, (nenv + ne + 2) * sizeof(char *));
                                j.envp[ne++] = tok;
                        } else {
                                j.argv = xrealloc(j.argv, (na + 2) * sizeof(char *));
                                j.argv[na++] = tok;
                        }
                }
                if (na == 0) {
                        fprintf(stderr, "timeit: %s: a job without a program\n", path);
                        exit(2);
                }
                j.argv[na] = NULL;
                /* Assignments first, so that they win over the inherited ones. */
                memcpy(j.envp + ne, environ, nenv * sizeof(char *));
                j.envp[ne + nenv] = NULL;
                jobs = xrealloc(jobs, (n + 1) * sizeof(Job));
                jobs[n++] = j;
        }
        free(line);
        fclose(f);
        *ret = jobs;
        return n;
}

static pid_t spawn(const Job *j) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, strcmp(j->in, "-") == 0 ? "/dev/null" : j->in,
                                         O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        pid_t pid;
        int r = posix_spawn(&pid, j->argv[0], &fa, NULL, j->argv, j->envp);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0) {
                errno = r;
                die(j->argv[0]);
        }
        return pid;
}

static long long cpu_ns(const struct rusage *ru) {
        return (ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000LL +
               (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000LL;
}

static int status_code(int st) {
        if (WIFEXITED(st))
                return WEXITSTATUS(st);
        if (WIFSIGNALED(st))
                return 128 + WTERMSIG(st);
        return 255;
}

/* The group order of one round: a Fisher-Yates shuffle from a fixed
 * xorshift sequence (the same orders every run). */
static void shuffle(size_t *order, size_t n, unsigned long long *seed) {
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        for (size_t i = n; i > 1; i--) {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                size_t j = (size_t) (*seed % i), t = order[i - 1];
                order[i - 1] = order[j];
                order[j] = t;
        }
}

static int run_rr(unsigned rounds, unsigned warmup, double budget, size_t group, Job *jobs, size_t n) {
        long long start = now_ns();
        size_t g = group > 0 ? group : n, ngroups = n ? (n + g - 1) / g : 0;
        size_t *order = xrealloc(NULL, (ngroups + 1) * sizeof(size_t));
        unsigned long long seed = 0x9e3779b97f4a7c15ULL;
        for (unsigned r = 0; r < rounds + warmup; r++) {
                if (budget > 0 && r > warmup && now_ns() - start > (long long) (budget * 1e9))
                        break;
                if (group > 0)
                        shuffle(order, ngroups, &seed);
                else
                        order[0] = 0;
                for (size_t k = 0; k < ngroups; k++) {
                        for (size_t i = order[k] * g; i < n && i < (order[k] + 1) * g; i++) {
                                int st;
                                struct rusage ru;
                                long long t0 = now_ns();
                                pid_t pid = spawn(&jobs[i]);
                                if (wait4(pid, &st, 0, &ru) < 0)
                                        die("wait4");
                                long long t = now_ns() - t0;
                                if (r >= warmup)
                                        printf("%zu %lld %ld %d %lld\n", i, t, ru.ru_maxrss,
                                               status_code(st), cpu_ns(&ru));
                        }
                }
        }
        free(order);
        return 0;
}

static int run_par(Job *jobs, size_t n) {
        pid_t *pids = xrealloc(NULL, n * sizeof(pid_t));
        long long *end = xrealloc(NULL, n * sizeof(long long));
        long *rss = xrealloc(NULL, n * sizeof(long));
        int *code = xrealloc(NULL, n * sizeof(int));
        long long *cpu = xrealloc(NULL, n * sizeof(long long));
        long long t0 = now_ns();
        for (size_t i = 0; i < n; i++)
                pids[i] = spawn(&jobs[i]);
        long long last = t0;
        for (size_t done = 0; done < n; done++) {
                int st;
                struct rusage ru;
                pid_t pid = wait4(-1, &st, 0, &ru);
                if (pid < 0)
                        die("wait4");
                long long t = now_ns();
                for (size_t i = 0; i < n; i++)
                        if (pids[i] == pid) {
                                end[i] = t;
                                rss[i] = ru.ru_maxrss;
                                code[i] = status_code(st);
                                cpu[i] = cpu_ns(&ru);
                        }
                last = t;
        }
        for (size_t i = 0; i < n; i++)
                printf("%zu %lld %ld %d %lld\n", i, end[i] - t0, rss[i], code[i], cpu[i]);
        printf("total %lld\n", last - t0);
        free(pids);
        free(end);
        free(rss);
        free(code);
        free(cpu);
        return 0;
}

static int cmp_ll(const void *a, const void *b) {
        long long x = *(const long long *) a, y = *(const long long *) b;
        return x < y ? -1 : x > y;
}

static int run_readloop(unsigned n, const char *path) {
        long long *t = xrealloc(NULL, (n ? n : 1) * sizeof(long long));
        char buf[4096];
        for (unsigned i = 0; i < n; i++) {
                long long t0 = now_ns();
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        die(path);
                if (read(fd, buf, sizeof buf) < 0)
                        die(path);
                close(fd);
                t[i] = now_ns() - t0;
        }
        qsort(t, n, sizeof(long long), cmp_ll);
        printf("%lld\n", n ? t[n / 2] : 0);
        free(t);
        return 0;
}

static void free_jobs(Job *jobs, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(jobs[i].in);
                for (char **a = jobs[i].argv; *a; a++)
                        free(*a);
                free(jobs[i].argv);
                /* envp: our assignments first, then environ's own strings. */
                for (char **e = jobs[i].envp; *e && *e != environ[0]; e++)
                        free(*e);
                free(jobs[i].envp);
        }
        free(jobs);
}

int main(int argc, char **argv) {
        Job *jobs;
        int r;
        if (argc == 4 && strcmp(argv[1], "readloop") == 0)
                return run_readloop((unsigned) strtoul(argv[2], NULL, 10), argv[3]);
        if (argc >= 5 && argc <= 7 && strcmp(argv[1], "rr") == 0) {
                size_t n = load_jobs(argv[4], &jobs);
                r = run_rr((unsigned) strtoul(argv[2], NULL, 10),
                           (unsigned) strtoul(argv[3], NULL, 10),
                           argc >= 6 ? strtod(argv[5], NULL) : 0,
                           argc == 7 ? strtoul(argv[6], NULL, 10) : 0, jobs, n);
                free_jobs(jobs, n);
                return r;
        }
        if (argc == 3 && strcmp(argv[1], "par") == 0) {
                size_t n = load_jobs(argv[2], &jobs);
                r = run_par(jobs, n);
                free_jobs(jobs, n);
                return r;
        }
        fprintf(stderr, "usage: timeit rr ROUNDS WARMUP JOBFILE [BUDGET [GROUP]] | timeit par JOBFILE | timeit readloop N FILE\n");
        return 2;
}
