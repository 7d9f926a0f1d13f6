/* The command line (main.c). */
#ifndef KB_MAIN_H
#define KB_MAIN_H

/* kbench ARGS: argv[0] is the program, argv[1] the command. Returns the exit
 * code (KB_EXIT_*) and never exits; it frees what it allocates, keeps no state
 * between calls and resets getopt, so one process may call it many times
 * (main() is kb_main; tests/fuzz/fuzz_cmdline.c). getopt_long may permute argv. */
int kb_main(int argc, char **argv);

#endif
