/* A row's words (row.h). */
#include "row.h"
const char *kb_verdict_name(int v) { return v == 1 ? "pass" : v == 0 ? "fail" : v == KB_V_NA ? "n/a" : "skipped"; }
