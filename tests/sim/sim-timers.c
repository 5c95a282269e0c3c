/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: delayed registration and the interruptible sleeps of a
 * blocked remove.
 */
#include "sim.h"

struct Timers timers = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Sleeps ms milliseconds; returns false early when the simulator stops. */
bool sim_sleep(unsigned ms) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += ms / 1000;
        ts.tv_nsec += (long) (ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&timers.lock);
        while (!timers.stopping && pthread_cond_timedwait(&timers.cond, &timers.lock, &ts) != ETIMEDOUT)
                ;
        bool ok = !timers.stopping;
        pthread_mutex_unlock(&timers.lock);
        return ok;
}

typedef struct DelayedRegister {
        char *parent;
        unsigned ms;
} DelayedRegister;

static void *delayed_register(void *arg) {
        DelayedRegister *d = arg;
        if (sim_sleep(d->ms)) {
                pthread_rwlock_wrlock(&model_lock);
                Parent *p = parent_find(d->parent);
                if (p)
                        parent_register(p);
                pthread_rwlock_unlock(&model_lock);
                content_cache_flush(NULL);
        }
        free(d->parent);
        free(d);
        return NULL;
}

int timer_start(const char *parent, unsigned ms) {
        DelayedRegister *d = xcalloc(1, sizeof(DelayedRegister));
        d->parent = xstrdup(parent);
        d->ms = ms;
        pthread_mutex_lock(&timers.lock);
        timers.threads = xrealloc(timers.threads, (timers.n + 1) * sizeof(pthread_t));
        int r = pthread_create(&timers.threads[timers.n], NULL, delayed_register, d);
        if (r == 0)
                timers.n++;
        pthread_mutex_unlock(&timers.lock);
        if (r != 0) {
                free(d->parent);
                free(d);
                return -r;
        }
        return 0;
}

void timers_stop(void) {
        pthread_mutex_lock(&timers.lock);
        timers.stopping = true;
        pthread_cond_broadcast(&timers.cond);
        pthread_mutex_unlock(&timers.lock);
        for (size_t i = 0; i < timers.n; i++)
                pthread_join(timers.threads[i], NULL);
        free(timers.threads);
}
