/* The staged cache of kernels/kv_append.h: each sequence's context where
 * ppbench put it, its new tokens after it (first the rest of its last context
 * page, then pages appended after ppbench's), and the copies that build it.
 * The expected tables and runs are worked out by hand below; a small
 * simulation then checks, token by token, that every position of every
 * sequence holds the row it must. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "kv_append.h"

/* Two sequences, pages of 4 tokens, ppbench's cache of 3 pages (2 used + 1 spare):
 *   seq 0: context 5 (pages 2, 0 in ppbench's table), 6 new tokens (k/v rows 0..5)
 *   seq 1: no context, 9 new tokens (k/v rows 6..14) */
enum { BATCH = 2, PAGE = 4, NUM_BLOCKS = 3, MBPS = 2 };
static const int32_t context_lens[BATCH] = {5, 0};
static const int32_t query_lens[BATCH] = {6, 9};
static const int32_t start_loc[BATCH + 1] = {0, 6, 15};
static const int32_t table[BATCH * MBPS] = {2, 0, 0, 0};

static void test_sizes_and_block_table(void **state)
{
    (void)state;
    /* seq 0: 11 tokens = 3 pages; seq 1: 9 tokens = 3 pages */
    assert_int_equal(ppb_kv_append_blocks_per_seq(context_lens, query_lens, BATCH, PAGE), 3);
    /* seq 0 needs 1 page past its 2 context pages, seq 1 all 3 */
    assert_int_equal(ppb_kv_append_num_blocks(context_lens, query_lens, BATCH, PAGE, NUM_BLOCKS), 3 + 1 + 3);
    int32_t staged[BATCH * 3];
    memset(staged, 0x7f, sizeof staged);
    ppb_kv_append_block_table(table, MBPS, context_lens, query_lens, BATCH, PAGE, NUM_BLOCKS, 3, staged);
    const int32_t want[BATCH * 3] = {2, 0, 3, /* the context's pages kept, then the first appended page */
                                     4, 5, 6};
    assert_memory_equal(staged, want, sizeof want);
}

typedef struct copy_log {
    int n;
    struct { int from_new; size_t dst, src, rows; } c[16];
} copy_log;

static int record(void *user, int from_new, size_t dst, size_t src, size_t rows)
{
    copy_log *log = user;
    if (log->n == 16)
        return 1;
    log->c[log->n].from_new = from_new, log->c[log->n].dst = dst, log->c[log->n].src = src;
    log->c[log->n].rows = rows;
    log->n++;
    return 0;
}

static void test_copies_are_the_fewest_runs(void **state)
{
    (void)state;
    int32_t staged[BATCH * 3];
    ppb_kv_append_block_table(table, MBPS, context_lens, query_lens, BATCH, PAGE, NUM_BLOCKS, 3, staged);
    copy_log log = {0};
    assert_int_equal(ppb_kv_append_copies(staged, 3, context_lens, query_lens, start_loc, BATCH, PAGE, NUM_BLOCKS,
                                          record, &log), 0);
    assert_int_equal(log.n, 4);
    /* ppbench's whole cache: 3 pages of 4 rows */
    assert_int_equal(log.c[0].from_new, 0), assert_int_equal(log.c[0].dst, 0), assert_int_equal(log.c[0].rows, 12);
    /* seq 0: positions 5..7 into page 0 slots 1..3, then 8..10 into page 3 (not contiguous: two runs) */
    assert_int_equal(log.c[1].from_new, 1), assert_int_equal(log.c[1].dst, 1), assert_int_equal(log.c[1].src, 0);
    assert_int_equal(log.c[1].rows, 3);
    assert_int_equal(log.c[2].dst, 12), assert_int_equal(log.c[2].src, 3), assert_int_equal(log.c[2].rows, 3);
    /* seq 1: pages 4, 5, 6 follow each other: one run of 9 */
    assert_int_equal(log.c[3].dst, 16), assert_int_equal(log.c[3].src, 6), assert_int_equal(log.c[3].rows, 9);
}

/* Rows as numbers: ppbench's cache row r holds 1000 + r, new token t holds t. */
typedef struct sim {
    int rows[7 * PAGE];
} sim;

static int simulate(void *user, int from_new, size_t dst, size_t src, size_t rows)
{
    sim *s = user;
    for (size_t i = 0; i < rows; i++)
        s->rows[dst + i] = from_new ? (int)(src + i) : 1000 + (int)(src + i);
    return 0;
}

static void test_every_position_holds_its_row(void **state)
{
    (void)state;
    int32_t staged[BATCH * 3];
    ppb_kv_append_block_table(table, MBPS, context_lens, query_lens, BATCH, PAGE, NUM_BLOCKS, 3, staged);
    sim s;
    memset(&s, 0xff, sizeof s);
    ppb_kv_append_copies(staged, 3, context_lens, query_lens, start_loc, BATCH, PAGE, NUM_BLOCKS, simulate, &s);
    for (int b = 0; b < BATCH; b++)
        for (int pos = 0; pos < context_lens[b] + query_lens[b]; pos++) {
            int got = s.rows[staged[b * 3 + pos / PAGE] * PAGE + pos % PAGE];
            int want = pos < context_lens[b] ? 1000 + table[b * MBPS + pos / PAGE] * PAGE + pos % PAGE
                                             : start_loc[b] + pos - context_lens[b];
            if (got != want)
                fail_msg("sequence %d position %d holds %d, not %d", b, pos, got, want);
        }
}

static void test_a_failed_copy_stops(void **state)
{
    (void)state;
    int32_t staged[BATCH * 3];
    ppb_kv_append_block_table(table, MBPS, context_lens, query_lens, BATCH, PAGE, NUM_BLOCKS, 3, staged);
    copy_log log = {.n = 15}; /* room for one copy, then record() fails */
    assert_int_equal(ppb_kv_append_copies(staged, 3, context_lens, query_lens, start_loc, BATCH, PAGE, NUM_BLOCKS,
                                          record, &log), 1);
    assert_int_equal(log.n, 16);
}

/* New tokens into pages of vLLM's paged-attention layout, checked against the
 * layout as vLLM declares it, indexed by hand: key_cache [pages, kv_heads,
 * head_dim / 8, page_size, 8], value_cache [pages, kv_heads, head_dim,
 * page_size]. Three rows from position 3 of two pages of 4 (the last slot of
 * page 0, then slots 0 and 1 of page 1); everything else keeps its value. */
enum { PP = 4, PKVH = 2, PD = 16, PAGES = 2, PROWS = 3, PFIRST = 3 };

static void test_rows_into_the_paged_layout(void **state)
{
    (void)state;
    const size_t page_elems = (size_t)PP * PKVH * PD;
    uint16_t src[PROWS * PKVH * PD], k[PAGES * PP * PKVH * PD], v[PAGES * PP * PKVH * PD];
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++)
        src[i] = (uint16_t)(1000 + i);
    memset(k, 0xee, sizeof k), memset(v, 0xee, sizeof v);
    ppb_kv_append_rows_paged(k, src, PFIRST, PROWS, 1, PP, PKVH, PD);
    ppb_kv_append_rows_paged(v, src, PFIRST, PROWS, 0, PP, PKVH, PD);
    int written_k = 0, written_v = 0;
    for (size_t page = 0; page < PAGES; page++)
        for (size_t head = 0; head < PKVH; head++)
            for (size_t d = 0; d < PD; d++)
                for (size_t slot = 0; slot < PP; slot++) {
                    size_t pos = page * PP + slot;
                    size_t ki = page * page_elems + ((head * (PD / 8) + d / 8) * PP + slot) * 8 + d % 8;
                    size_t vi = page * page_elems + (head * PD + d) * PP + slot;
                    if (pos >= PFIRST && pos < PFIRST + PROWS) {
                        uint16_t want = src[(pos - PFIRST) * PKVH * PD + head * PD + d];
                        assert_int_equal(k[ki], want);
                        assert_int_equal(v[vi], want);
                        written_k++, written_v++;
                    } else {
                        assert_int_equal(k[ki], 0xeeee);
                        assert_int_equal(v[vi], 0xeeee);
                    }
                }
    assert_int_equal(written_k, PROWS * PKVH * PD);
    assert_int_equal(written_v, PROWS * PKVH * PD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_and_block_table),
        cmocka_unit_test(test_copies_are_the_fewest_runs),
        cmocka_unit_test(test_every_position_holds_its_row),
        cmocka_unit_test(test_a_failed_copy_stops),
        cmocka_unit_test(test_rows_into_the_paged_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
