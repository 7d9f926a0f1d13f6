/* One LayerNorm or RMSNorm case from parameter names and values (a NULL-ended
 * list of pairs), as a sweep expands it: the norms' tests' descriptors and
 * tolerances. Included after cmocka.h and the core headers. */
#ifndef KB_TEST_NORM_CASE_H
#define KB_TEST_NORM_CASE_H

static kb_case one_case(const char *op, const char *const *kv)
{
    kb_sweep s;
    kb_sweep_init(&s, kb_find_op(op));
    char err[KB_ERRLEN];
    for (int i = 0; kv[i]; i += 2) assert_int_equal(kb_sweep_set(&s, kv[i], kv[i + 1], err, sizeof err), 0);
    kb_case *cases = NULL;
    int n = 0;
    assert_int_equal(kb_sweep_expand(&s, &cases, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    kb_sweep_free(&s);
    kb_case c = cases[0]; /* the norms have no list parameter: nothing of c points into cases */
    free(cases);
    return c;
}
#endif
