/* kbench merge (merge.c). */
#ifndef KB_FLEET_MERGE_H
#define KB_FLEET_MERGE_H

int kb_merge_main(int argc, char **argv);   /* merge.c: argv[0] = "merge"; returns the exit code */
/* kbench merge's work: the parts into out (and csv, from each part's CSV
 * beside it; NULL: none). Parts of --devices workers (kbench.worker) are
 * complementary, their rows get "gpu" and "gpu_uuid". The exit code: 0, 1
 * shards or cases missing, 2 a refused part (said on stderr). */
int kb_merge_files(const char *const *paths, int np, const char *out, const char *csv, int quiet,
                   const char *expected);
/* (expected: the cases to look for, expected[case] != 0, the parts being one
 * run's; NULL: every case of the sweep, the parts its shards) */

#endif
