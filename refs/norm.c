/* LayerNorm and RMSNorm references over rows of `cols`, in double. */
#include "refs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ref_norm_fwd(int rms, long rows, long cols, double eps, const double *x, const double *gamma,
                  const double *beta, double *y, double *mean, double *rstd)
{
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double mu = 0, ss = 0;
        if (!rms) {
            for (long j = 0; j < cols; j++) mu += xr[j];
            mu /= (double)cols;
        }
        for (long j = 0; j < cols; j++) ss += (xr[j] - mu) * (xr[j] - mu);
        double rs = 1.0 / sqrt(ss / (double)cols + eps);
        if (mean) mean[r] = mu;
        if (rstd) rstd[r] = rs;
        if (y)
            for (long j = 0; j < cols; j++)
                y[r * cols + j] = (xr[j] - mu) * rs * (gamma ? gamma[j] : 1.0) + (beta ? beta[j] : 0.0);
    }
}

/* x̂ = (x - mean)·rstd (RMSNorm: x·rstd), g = dy·γ:
 * dx = rstd·(g − mean(g) − x̂·mean(g·x̂))   (RMSNorm: without the mean(g) term),
 * the gradient of y = x̂·γ + β when mean and rstd are x's own statistics.
 * Returns the L2 norm over dx of rstd·(|g| + |mean(g)| + |x̂·mean(g·x̂)|): the
 * size of the terms that cancel in dx (a row of one element has dx = 0). */
double ref_norm_bwd(int rms, long rows, long cols, const double *x, const double *dy, const double *gamma,
                    const double *mean, const double *rstd, double *dx, double *dgamma, double *dbeta)
{
    double terms = 0;
    if (dgamma) memset(dgamma, 0, (size_t)cols * sizeof *dgamma);
    if (dbeta) memset(dbeta, 0, (size_t)cols * sizeof *dbeta);
#pragma omp parallel
    {
        double *dg = dgamma ? calloc((size_t)cols + 1, sizeof *dg) : NULL;
        double *db = dbeta ? calloc((size_t)cols + 1, sizeof *db) : NULL;
#pragma omp for schedule(static) reduction(+ : terms)
        for (long r = 0; r < rows; r++) {
            const double *xr = x + r * cols, *dyr = dy + r * cols;
            double mu = rms ? 0.0 : mean[r], rs = rstd[r], sg = 0, sgx = 0;
            for (long j = 0; j < cols; j++) {
                double xh = (xr[j] - mu) * rs, g = dyr[j] * (gamma ? gamma[j] : 1.0);
                sg += g;
                sgx += g * xh;
                if (dg) dg[j] += dyr[j] * xh;
                if (db) db[j] += dyr[j];
            }
            double c1 = sgx / (double)cols, c2 = rms ? 0.0 : sg / (double)cols;
            if (dx)
                for (long j = 0; j < cols; j++) {
                    double xh = (xr[j] - mu) * rs, g = dyr[j] * (gamma ? gamma[j] : 1.0);
                    dx[r * cols + j] = rs * (g - c2 - xh * c1);
                    double t = rs * (fabs(g) + fabs(c2) + fabs(xh * c1));
                    terms += t * t;
                }
        }
#pragma omp critical
        {
            for (long j = 0; dg && j < cols; j++) dgamma[j] += dg[j];
            for (long j = 0; db && j < cols; j++) dbeta[j] += db[j];
        }
        free(dg);
        free(db);
    }
    return sqrt(terms);
}

void ref_norm_colsum_scales(int rms, long rows, long cols, const double *x, const double *dy, const double *mean,
                            const double *rstd, double *sg, double *sb)
{
    double g2 = 0, b2 = 0;
#pragma omp parallel for schedule(static) reduction(+ : g2, b2)
    for (long j = 0; j < cols; j++) {
        double ag = 0, ab = 0;
        for (long r = 0; r < rows; r++) {
            const double xh = (x[r * cols + j] - (rms ? 0.0 : mean[r])) * rstd[r], d = dy[r * cols + j];
            ag += fabs(d * xh);
            ab += fabs(d);
        }
        g2 += ag * ag;
        b2 += ab * ab;
    }
    *sg = sqrt(g2);
    *sb = sqrt(b2);
}
