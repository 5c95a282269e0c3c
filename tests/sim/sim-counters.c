/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mdev-sysfs-sim: the per-path access counters (.sim/counters). */
#include "sim.h"

typedef struct Counter {
        char *path;
        struct Counter *next;
        unsigned long opens, reads, writes, readdirs, getattrs, readlinks;
} Counter;

#define COUNTER_BUCKETS 4096
static struct {
        pthread_mutex_t lock;
        Counter *buckets[COUNTER_BUCKETS];
        size_t n;
} counters = { .lock = PTHREAD_MUTEX_INITIALIZER };

void count(const char *path, int what) {
        if (!path || strncmp(path, CTL_DIR, strlen(CTL_DIR)) == 0)
                return;
        size_t h = node_hash(NULL, path, strlen(path)) % COUNTER_BUCKETS;
        pthread_mutex_lock(&counters.lock);
        Counter *c = counters.buckets[h];
        while (c && !streq(c->path, path))
                c = c->next;
        if (!c) {
                c = xcalloc(1, sizeof(Counter));
                c->path = xstrdup(path);
                c->next = counters.buckets[h];
                counters.buckets[h] = c;
                counters.n++;
        }
        switch (what) {
        case C_OPEN: c->opens++; break;
        case C_READ: c->reads++; break;
        case C_WRITE: c->writes++; break;
        case C_READDIR: c->readdirs++; break;
        case C_GETATTR: c->getattrs++; break;
        case C_READLINK: c->readlinks++; break;
        }
        pthread_mutex_unlock(&counters.lock);
}

void counters_reset(void) {
        pthread_mutex_lock(&counters.lock);
        for (size_t i = 0; i < COUNTER_BUCKETS; i++) {
                for (Counter *c = counters.buckets[i], *next; c; c = next) {
                        next = c->next;
                        free(c->path);
                        free(c);
                }
                counters.buckets[i] = NULL;
        }
        counters.n = 0;
        pthread_mutex_unlock(&counters.lock);
}

static int counter_cmp(const void *a, const void *b) {
        return strcmp((*(Counter *const *) a)->path, (*(Counter *const *) b)->path);
}

/* "# opens reads writes readdirs getattrs readlinks path" then one line per
 * path, sorted by path. */
char *counters_text(void) {
        char *buf;
        size_t size;
        FILE *f = xopen_memstream(&buf, &size);
        pthread_mutex_lock(&counters.lock);
        Counter **v = xcalloc(counters.n, sizeof(Counter *));
        size_t n = 0;
        for (size_t i = 0; i < COUNTER_BUCKETS; i++)
                for (Counter *c = counters.buckets[i]; c; c = c->next)
                        v[n++] = c;
        qsort(v, n, sizeof(Counter *), counter_cmp);
        fputs("# opens reads writes readdirs getattrs readlinks path\n", f);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%lu %lu %lu %lu %lu %lu %s\n", v[i]->opens, v[i]->reads, v[i]->writes,
                        v[i]->readdirs, v[i]->getattrs, v[i]->readlinks, v[i]->path);
        pthread_mutex_unlock(&counters.lock);
        free(v);
        fclose(f);
        return buf;
}
