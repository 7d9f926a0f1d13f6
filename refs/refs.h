/* CPU references, in double precision, from the exact (quantised) inputs. */
#ifndef KB_REFS_H
#define KB_REFS_H

/* RoPE: layout 0 sbhd [s,b,h,d], 1 bshd [b,s,h,d], 2 thd [t,h,d]; style 0
 * neox (rotate halves), 1 gptj (rotate adjacent pairs). angles[p*rot/2 + i]
 * is the angle of pair i at position p. Backward applies R(-theta). */
typedef struct {
    int layout, style, backward;
    long seq, batch, heads, dim, rot;
    const int *cu_seqlens; /* thd: batch+1 prefix sums */
    const float *angles;
} ref_rope_args;

long ref_rope_rows(const ref_rope_args *a); /* head vectors in the tensor */
void ref_rope(const ref_rope_args *a, const double *in, double *out);
/* The angle table TransformerEngine builds: theta = p * base^(-2i/rot). */
void ref_rope_angles(float *angles, long positions, long rot, double base);

/* LayerNorm (rms = 0) and RMSNorm (rms = 1) over rows of `cols` elements.
 * gamma, beta may be NULL (1 and 0); y, mean, rstd may be NULL (not wanted;
 * RMSNorm's mean is 0). */
void ref_norm_fwd(int rms, long rows, long cols, double eps, const double *x, const double *gamma,
                  const double *beta, double *y, double *mean, double *rstd);
/* Backward from the saved statistics (mean unused by RMSNorm): dx, and the
 * column sums dgamma = sum over rows of dy*x^, dbeta = sum of dy (each may be NULL).
 * Returns the L2 norm of the terms dx is a sum of (kb_buf.scale). */
double ref_norm_bwd(int rms, long rows, long cols, const double *x, const double *dy, const double *gamma,
                    const double *mean, const double *rstd, double *dx, double *dgamma, double *dbeta);
/* The sizes of the terms the column sums add, where they can cancel (a few
 * rows of dy of either sign): the L2 norm over the columns of sum over rows
 * of |dy*x^| (*sg, dgamma's) and of |dy| (*sb, dbeta's); kb_buf.scale. */
void ref_norm_colsum_scales(int rms, long rows, long cols, const double *x, const double *dy, const double *mean,
                            const double *rstd, double *sg, double *sb);

/* SwiGLU MLP: y = (silu(x G^T) * (x U^T)) D^T for `rows` independent rows of
 * x (the caller picks which tokens): x [rows, hidden], G and U [inter, hidden],
 * D [hidden, inter], y [rows, hidden], all row-major (nn.Linear's out x in).
 * Sums in double; g, u and h = silu(g) * u are rounded to dtype (0 fp32,
 * 1 fp16, 2 bf16) where the GPU stores them, y is left exact. */
typedef struct {
    long rows, hidden, inter;
    int dtype;
} ref_mlp_args;

double ref_silu(double a); /* a * sigmoid(a) */
/* How many of `tokens` rows the reference computes: all at small shapes, a
 * sample (at least 64) where tokens * hidden * inter exceeds its budget. */
long ref_mlp_sample_count(long tokens, long hidden, long inter);
/* Returns y's conditioned scale (kb_buf.scale): the L2 norm over y of
 * sqrt(sum_k (hc_rk D_ik)^2), where hc = max(|h|, (|silu'(g)| gs |u| +
 * |silu(g)| us) / 4) and gs, us are the L2 norms of the products x G and x U
 * that g and u sum. Where g and u are well conditioned (|g| ~ gs) hc is |h|
 * and, with y's terms of random sign, the scale about ||y||; where a few
 * products cancel (tiny hidden sizes), fp32 sums err relative to gs, not |g|,
 * and hc carries that through silu and the product into y. */
double ref_mlp(const ref_mlp_args *a, const double *x, const double *G, const double *U, const double *D, double *y);
/* The same, bit for bit, with G, U and D in the dtype a->dtype (the op's
 * host buffers), each row turned into doubles as it is read. */
double ref_mlp_typed(const ref_mlp_args *a, const double *x, const void *G, const void *U, const void *D, double *y);

#endif
