/* ppb-reference-time: how long the float64 reference rows of one decode shape take on
 * this host (the cold part of a run's check, docs/BENCHMARKS.md "The harness's own cost").
 *
 *   ppb-reference-time [BATCH [SEQ_LEN [HEADS KV_HEADS [SAMPLE_ROWS]]]]
 *       default 8 32768 32 4; D 128, bf16, page 16; every row checked, or with SAMPLE_ROWS
 *       the run's sample of that many rows
 * Does what a run does: the host inputs the rows need (ppb_reference_fill_inputs), then
 * the rows. Prints the rows, the milliseconds of each and a checksum of the values (the
 * same checksum before and after a change: the same rows). PPBENCH_THREADS sets the threads. */
#include <stdio.h>
#include <stdlib.h>

#include "provenance.h"
#include "reference.h"
#include "threads.h"

int main(int argc, char **argv)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.batch = argc > 1 ? atoi(argv[1]) : 8;
    c.shape.seq_len = argc > 2 ? atoi(argv[2]) : 32768;
    c.shape.num_heads = argc > 4 ? atoi(argv[3]) : 32;
    c.shape.num_kv_heads = argc > 4 ? atoi(argv[4]) : 4;
    c.shape.head_dim = 128;
    c.shape.page_size = 16;
    c.shape.dtype = PPB_BF16;
    ppb_case_make_key(&c);
    ppb_workload w;
    ppb_reference_rows rows;
    ppb_err err = {{0}};
    const int sample = argc > 5 ? atoi(argv[5]) : 0;
    const ppb_check_settings cs = {{1e-2, 2e-2}, {1e-2, 2e-2}, sample > 0 ? 0 : 1L << 30, sample > 0 ? sample : 1};
    if (ppb_workload_create(&w, &c, 1, 0, &err) != PPB_OK) {
        fprintf(stderr, "ppb-reference-time: %s\n", err.msg);
        return 2;
    }
    double t0 = ppb_monotonic_ms();
    int rc = ppb_reference_fill_inputs(&w, &cs, 3, &err);
    double t1 = ppb_monotonic_ms();
    if (rc == PPB_OK)
        rc = ppb_reference_rows_compute(&w, &cs, 3, &rows, &err);
    double t2 = ppb_monotonic_ms();
    if (rc != PPB_OK) {
        fprintf(stderr, "ppb-reference-time: %s\n", err.msg);
        ppb_workload_free(&w);
        return 1;
    }
    double sum = 0;
    for (long i = 0; i < rows.n * c.shape.head_dim; i++)
        sum += rows.values[i];
    printf("%s: inputs %.0f ms (cache %s), %ld rows in %.0f ms on %d threads (checksum %.17g)\n", c.key, t1 - t0,
           w.k_cache ? "filled" : "generated", rows.n, t2 - t1, ppb_thread_count(), sum);
    ppb_reference_rows_free(&rows);
    ppb_workload_free(&w);
    return 0;
}
