/* timer.h's kb_turn_at: the order of the timed turns' batches. After the
 * warm-ups (in order) the rounds go backward, forward, backward ... (ABBA),
 * each round every turn once; over each pair of rounds every turn follows
 * each of its neighbours as often (the fixed round robin before had turn i
 * always after turn i - 1, so under a power cap the same turn always started
 * on the clocks its predecessor left). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "../cli/harness/timer.h"

/* the warm-ups then `rounds` rounds of n turns, as kb_time_turns runs them (none done early) */
static int sequence(int n, unsigned rounds, int *seq)
{
    int m = 0;
    for (int i = 0; i < n; i++) seq[m++] = i;
    for (unsigned r = 0; r < rounds; r++)
        for (int k = 0; k < n; k++) seq[m++] = kb_turn_at(r, k, n);
    return m;
}

static void test_abba(void **state)
{
    (void)state;
    int seq[64];
    const int m = sequence(3, 3, seq);
    const int want[] = {0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0};
    assert_int_equal(m, 12);
    assert_memory_equal(seq, want, sizeof want);
}

static void test_each_round_a_permutation(void **state)
{
    (void)state;
    for (int n = 1; n <= 8; n++)
        for (unsigned r = 0; r < 5; r++) {
            int seen[8] = {0};
            for (int k = 0; k < n; k++) {
                const int i = kb_turn_at(r, k, n);
                assert_true(i >= 0 && i < n);
                seen[i]++;
            }
            for (int i = 0; i < n; i++) assert_int_equal(seen[i], 1);
        }
}

/* over the rounds after the warm-ups, taken in pairs, turn i follows i - 1 as
 * often as i + 1 (the ends of a round follow themselves at its turn-around) */
static void test_neighbours_balanced(void **state)
{
    (void)state;
    for (int n = 2; n <= 8; n++) {
        int seq[8 * 9], after[8][8];
        memset(after, 0, sizeof after);
        const int m = sequence(n, 4, seq);
        for (int j = n; j < m; j++) after[seq[j]][seq[j - 1]]++;
        for (int i = 0; i < n; i++) {
            const int lo = i > 0 ? after[i][i - 1] : after[i][i], hi = i < n - 1 ? after[i][i + 1] : after[i][i];
            assert_int_equal(lo, hi);
            assert_int_equal(lo, 2); /* two of each in four rounds */
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_abba),
        cmocka_unit_test(test_each_round_a_permutation),
        cmocka_unit_test(test_neighbours_balanced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
