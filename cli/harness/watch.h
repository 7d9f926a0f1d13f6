/* SIGINT and SIGTERM during a run, and the watchdog that ends a hung launch (watch.c). */
#ifndef KB_HARNESS_WATCH_H
#define KB_HARNESS_WATCH_H

#include <signal.h>

/* SIGINT or SIGTERM during a run (watch.c): 0, or the signal. The timer stops
 * sampling at the next batch, and the run writes no row for the case under way. */
extern volatile sig_atomic_t kb_stop_signal;
/* Catch them (kb_stop_signal set; a second one ends the process at once,
 * SA_RESETHAND), and put back what was there. */
void kb_catch_stop(struct sigaction old[2]);
void kb_uncatch_stop(const struct sigaction old[2]);
/* A launch or a batch finished: the run's watchdog is not to fire. */
void kb_watch_kick(void);
/* The watchdog armed for what (a row's label) for seconds between kicks:
 * past that it names what, says where the rows are and ends the process
 * (exit 3); disarmed once the row is done. */
void kb_watch_arm(const char *what, double seconds);
void kb_watch_disarm(void);
/* the result files the watchdog's and the run's last line name ("" none) */
void kb_watch_files(const char *csv, const char *json);
const char *kb_watch_files_text(void);

#endif
