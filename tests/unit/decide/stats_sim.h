/* Deterministic random numbers for the statistics tests (abtest, verdict,
 * trend): splitmix64 and Box-Muller, so simulated samples are the same on
 * every platform and every run. */
#ifndef PPB_TEST_STATS_SIM_H
#define PPB_TEST_STATS_SIM_H

#include <math.h>
#include <stdint.h>

typedef struct sim_rng {
    uint64_t state;
} sim_rng;

static inline uint64_t sim_next(sim_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static inline double sim_uniform(sim_rng *r)
{
    return ((double)(sim_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static inline double sim_normal(sim_rng *r)
{
    double u = sim_uniform(r), v = sim_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* n times from a lognormal: median `median`, log-sd `sigma`. */
static inline void sim_lognormal(sim_rng *r, double median, double sigma, double *out, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = median * exp(sigma * sim_normal(r));
}

#endif
