/* SIGINT and SIGTERM during a run, and the watchdog that ends a hung
 * launch (watch.h). */
#include "watch.h"
#include "../core/clock.h"
#include "../core/errors.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>

volatile sig_atomic_t kb_stop_signal;

static void on_stop(int sig) { kb_stop_signal = sig; }

/* SIGINT and SIGTERM (Ctrl-C, Slurm's time limit) stop the sweep after the
 * rows finished so far; a second one ends the process at once (SA_RESETHAND). */
void kb_catch_stop(struct sigaction old[2])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    kb_stop_signal = 0;
    sigaction(SIGINT, &sa, &old[0]);
    sigaction(SIGTERM, &sa, &old[1]);
}

void kb_uncatch_stop(const struct sigaction old[2])
{
    sigaction(SIGINT, &old[0], NULL);
    sigaction(SIGTERM, &old[1], NULL);
}

/* The watchdog: a kernel that never finishes (a plugin's, or kbench's own)
 * would block the sweep in a CUDA call for ever. While a row verifies and
 * times, every finished launch or batch of samples kicks it (kb_watch_kick);
 * a thread checks that one came within the limit; if not, it names the row,
 * says where the rows are and ends the process (exit 3): the GPU cannot be
 * freed from a hung kernel by this process, and the rows finished before are
 * already on disk. */
static struct {
    pthread_mutex_t mu;
    double deadline; /* 0: nothing armed */
    double limit;
    char what[1400], files[2 * PATH_MAX + 8]; /* the result files whole */
    int started;
} watch = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *watch_main(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(200000);
        pthread_mutex_lock(&watch.mu);
        int late = watch.deadline > 0 && kb_now_s() > watch.deadline;
        if (late) {
            fprintf(stderr, "\nkbench: %s: nothing finished for %.0f s: a hung kernel; stopping (exit 3)%s%s\n",
                    watch.what, watch.limit, watch.files[0] ? "; the rows written so far are in " : "", watch.files);
            fflush(stderr);
            _exit(KB_EXIT_CUDA);
        }
        pthread_mutex_unlock(&watch.mu);
    }
    return NULL;
}

void kb_watch_kick(void)
{
    pthread_mutex_lock(&watch.mu);
    if (watch.deadline > 0) watch.deadline = kb_now_s() + watch.limit;
    pthread_mutex_unlock(&watch.mu);
}

void kb_watch_arm(const char *what, double seconds)
{
    pthread_mutex_lock(&watch.mu);
    if (!watch.started) {
        pthread_t th;
        if (pthread_create(&th, NULL, watch_main, NULL) == 0) {
            pthread_detach(th);
            watch.started = 1;
        }
    }
    snprintf(watch.what, sizeof watch.what, "%s", what);
    watch.limit = seconds;
    watch.deadline = kb_now_s() + seconds;
    pthread_mutex_unlock(&watch.mu);
}

void kb_watch_disarm(void)
{
    pthread_mutex_lock(&watch.mu);
    watch.deadline = 0;
    pthread_mutex_unlock(&watch.mu);
}

void kb_watch_files(const char *csv, const char *json)
{
    snprintf(watch.files, sizeof watch.files, "%s%s%s", csv, csv[0] && json[0] ? " and " : "", json);
}

const char *kb_watch_files_text(void) { return watch.files; }
