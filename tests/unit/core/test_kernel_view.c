/* A case as the kernels see it: every kernel parameter and shape fact reaches
 * the ABI's configs and the plans' configs under its own name, and comes back.
 *
 * Each field of the case gets a value no other field has, so a member that a
 * conversion drops (left 0), copies twice or swaps with another shows up. The
 * checks by name are expanded from the parameter lists (ppb_kernel_params.h):
 * a parameter added there is checked here without editing this file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "builtin_plan.h"
#include "case.h"
#include "kernel_view.h"
#include "ppb_kernel_params.h"

#define FIRST_VALUE 100

/* A case of `kernel` whose fields that apply each hold a distinct value (>= FIRST_VALUE;
 * set directly, not validated: the conversions copy whatever is there). */
static ppb_case distinct_case(ppb_kernel_kind kernel)
{
    ppb_case c;
    ppb_case_init(&c, kernel);
    for (int f = 0; f < PPB_F_COUNT; f++)
        if ((ppb_field_get(f)->kernels >> kernel) & 1u)
            ppb_case_set(&c, f, FIRST_VALUE + f);
    return c;
}

/* Every int of a config struct holds a value the case set, no two the same. */
static void assert_all_distinct(const void *cfg, size_t size)
{
    int slots[32];
    size_t n = size / sizeof(int);
    assert_true(n <= sizeof slots / sizeof *slots);
    memcpy(slots, cfg, n * sizeof(int));
    for (size_t i = 0; i < n; i++) {
        if (slots[i] < FIRST_VALUE)
            fail_msg("member %zu of the config was not filled (%d)", i, slots[i]);
        for (size_t j = 0; j < i; j++)
            if (slots[i] == slots[j])
                fail_msg("members %zu and %zu hold the same field's value %d", j, i, slots[i]);
    }
}

/* The case's value of a field, by the list's enum tag. */
#define EXPECT_MEMBER(cfg, name, NAME, ...) assert_int_equal((cfg)->name, ppb_case_get(&c, PPB_F_##NAME));
#define EXPECT_FIELD(back, name, NAME, ...) \
    assert_int_equal(ppb_case_get(back, PPB_F_##NAME), ppb_case_get(&c, PPB_F_##NAME));

static void test_prefill_case_to_abi_to_plan_and_back(void **state)
{
    (void)state;
    const ppb_case c = distinct_case(PPB_PREFIX_PREFILL);
    ppb_kernel_view v;
    ppb_kernel_view_of_case(&c, &v);

    /* case -> ABI config: every member filled, each from its own field */
    assert_all_distinct(&v.prefill_cfg, sizeof v.prefill_cfg);
    PPBK_CONFIG_SHAPE_FACTS(EXPECT_MEMBER, &v.prefill_cfg)
    PPBK_PREFILL_PARAMS(EXPECT_MEMBER, &v.prefill_cfg)
    assert_int_equal(v.prefill_cfg.path, c.config.path);

    /* ABI config -> case: the same values come back */
    ppb_case back;
    ppb_case_init(&back, PPB_PREFIX_PREFILL);
    back.shape = (ppb_shape){PPBK_CONFIG_SHAPE_FACTS(PPBK_INIT_FROM, &v.prefill_cfg)};
    back.config = (ppb_config){PPBK_PREFILL_PARAMS(PPBK_INIT_FROM, &v.prefill_cfg) .path = v.prefill_cfg.path};
    PPBK_CONFIG_SHAPE_FACTS(EXPECT_FIELD, &back)
    PPBK_PREFILL_PARAMS(EXPECT_FIELD, &back)
    EXPECT_FIELD(&back, path, PATH)

    /* ABI config -> the plan's config: the built-in kernel's parameters */
    const ppb_prefill_config pc = ppb_builtin_prefill_plan_config(&v.prefill_cfg, 1000, 2000);
    assert_all_distinct(&pc, sizeof pc);
    PPBK_PREFILL_BUILTIN_PARAMS(EXPECT_MEMBER, &pc)
    assert_int_equal(pc.use_mma, 1000);
    assert_int_equal(pc.warp_size, 2000);
}

static void test_decode_case_to_abi_to_plan_and_back(void **state)
{
    (void)state;
    const ppb_case c = distinct_case(PPB_PAGED_ATTENTION);
    ppb_kernel_view v;
    ppb_kernel_view_of_case(&c, &v);

    assert_all_distinct(&v.decode_cfg, sizeof v.decode_cfg);
    PPBK_CONFIG_SHAPE_FACTS(EXPECT_MEMBER, &v.decode_cfg)
    PPBK_DECODE_PARAMS(EXPECT_MEMBER, &v.decode_cfg)
    assert_int_equal(v.decode_cfg.path, c.config.path);

    ppb_case back;
    ppb_case_init(&back, PPB_PAGED_ATTENTION);
    back.shape = (ppb_shape){PPBK_CONFIG_SHAPE_FACTS(PPBK_INIT_FROM, &v.decode_cfg)};
    back.config = (ppb_config){PPBK_DECODE_PARAMS(PPBK_INIT_FROM, &v.decode_cfg) .path = v.decode_cfg.path};
    PPBK_CONFIG_SHAPE_FACTS(EXPECT_FIELD, &back)
    PPBK_DECODE_PARAMS(EXPECT_FIELD, &back)
    EXPECT_FIELD(&back, path, PATH)

    const ppb_decode_config dc = ppb_builtin_decode_plan_config(&v.decode_cfg, 1000, 2000);
    assert_all_distinct(&dc, sizeof dc);
    PPBK_DECODE_BUILTIN_PARAMS(EXPECT_MEMBER, &dc)
    assert_int_equal(dc.use_mma, 1000);
    assert_int_equal(dc.warp_size, 2000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefill_case_to_abi_to_plan_and_back),
        cmocka_unit_test(test_decode_case_to_abi_to_plan_and_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
