/* A monotonic clock (clock.c). */
#ifndef KB_CORE_CLOCK_H
#define KB_CORE_CLOCK_H

double kb_now_s(void); /* a monotonic clock, seconds */

#endif
