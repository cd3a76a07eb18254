/* The impl case field (parsing, keys, overrides) and the plugin loader
 * (harness/run/impl.h) on real libraries: the example CPU plugin and one broken
 * library per way a plugin can be wrong (tests/plugin/). The libraries'
 * folders come from PPB_PLUGIN_DIR and PPB_BAD_PLUGIN_DIR (set by CMake); a
 * test without them fails rather than skipping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "impl.h"
#include "matrix.h"
#include "session.h"

static const char *env_dir(const char *name)
{
    const char *v = getenv(name);
    if (!v || !v[0])
        fail_msg("%s is not set (CMake sets it for this test)", name);
    return v;
}

/* ---- the field --------------------------------------------------------------------- */

static ppb_case prefill_case(void)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.query_len = 17;
    c.shape.num_heads = 4;
    c.shape.num_kv_heads = 2;
    c.shape.head_dim = 64;
    ppb_case_make_key(&c);
    return c;
}

static void test_builtin_is_default_and_left_out_of_the_key(void **state)
{
    (void)state;
    ppb_case c = prefill_case();
    assert_int_equal(c.config.impl, PPB_IMPL_BUILTIN);
    assert_null(strstr(c.key, "impl="));
    /* A key stored before the field existed reads back as builtin. */
    ppb_case back;
    ppb_err err;
    assert_int_equal(ppb_case_from_key(c.key, &back, &err), PPB_OK);
    assert_int_equal(back.config.impl, PPB_IMPL_BUILTIN);
    assert_string_equal(back.key, c.key);
}

static void test_named_impls_round_trip_through_the_key(void **state)
{
    (void)state;
    ppb_err err;
    int v = -1;
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, "vllm-triton", &v, &err), PPB_OK);
    assert_int_equal(v, PPB_IMPL_VLLM_TRITON);
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, "vllm-cuda", &v, &err), PPB_OK);
    assert_int_equal(v, PPB_IMPL_VLLM_CUDA);
    ppb_case c = prefill_case();
    c.config.impl = PPB_IMPL_VLLM_TRITON;
    ppb_case_make_key(&c);
    assert_non_null(strstr(c.key, " impl=vllm-triton"));
    ppb_case back;
    assert_int_equal(ppb_case_from_key(c.key, &back, &err), PPB_OK);
    assert_int_equal(back.config.impl, PPB_IMPL_VLLM_TRITON);
    /* impl is a config field: both sides of builtin-vs-vllm share a shape key. */
    char a[PPB_CASE_KEY_MAX], b[PPB_CASE_KEY_MAX];
    ppb_case builtin = prefill_case();
    ppb_case_shape_key(&c, a, sizeof a);
    ppb_case_shape_key(&builtin, b, sizeof b);
    assert_string_equal(a, b);
}

static void test_plugin_names_register_once(void **state)
{
    (void)state;
    ppb_err err;
    int a = -1, b = -1, other = -1;
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, "plugin:alpha", &a, &err), PPB_OK);
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, "plugin:alpha", &b, &err), PPB_OK);
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, "plugin:beta", &other, &err), PPB_OK);
    assert_int_equal(a, b);
    assert_int_not_equal(a, other);
    assert_true(a > PPB_IMPL_VLLM_CUDA);
    assert_string_equal(ppb_impl_name(a), "plugin:alpha");
    assert_string_equal(ppb_impl_library_name(a), "alpha");
    assert_string_equal(ppb_impl_library_name(PPB_IMPL_VLLM_TRITON), "vllm-triton");
    assert_null(ppb_impl_library_name(PPB_IMPL_BUILTIN));
}

/* A 40-character name (tree-labelled, with '@') survives the case key and
 * its parse back whole: keys once cut field text at 31 characters, so
 * resume, dump and compare looked for another plugin. */
static void test_long_plugin_names_survive_the_key(void **state)
{
    (void)state;
    ppb_err err;
    const char *name = "plugin:vllm-triton@0123456789abcdef012345678901"; /* 40 after "plugin:" */
    assert_int_equal((int)strlen(name) - 7, 40);
    ppb_case c = prefill_case();
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, name, &c.config.impl, &err), PPB_OK);
    ppb_case_make_key(&c);
    assert_non_null(strstr(c.key, " impl=plugin:vllm-triton@0123456789abcdef012345678901"));
    ppb_case back;
    assert_int_equal(ppb_case_from_key(c.key, &back, &err), PPB_OK);
    assert_string_equal(ppb_impl_name(back.config.impl), name);
}

static void test_bad_impl_values_are_refused(void **state)
{
    (void)state;
    ppb_err err;
    int v;
    const char *bad[] = {"vllm", "plugin:", "plugin:Upper", "plugin:has space", "plugin:a/b",
                         "plugin:this-name-is-far-too-long-to-be-a-plugin-name", "plugin:a@b/c"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err.msg[0] = '\0';
        assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, bad[i], &v, &err), PPB_EINPUT);
        assert_non_null(strstr(err.msg, "impl"));
    }
    ppb_case c = prefill_case();
    c.config.impl = PPB_IMPL_MAX - 1; /* never registered */
    assert_int_equal(ppb_case_validate(&c, &err), PPB_EINPUT);
}

static void test_override_sets_every_case_and_drops_duplicates(void **state)
{
    (void)state;
    ppb_case_list l = {0};
    ppb_case a = prefill_case(), b = prefill_case();
    b.config.impl = PPB_IMPL_VLLM_TRITON;
    ppb_case_make_key(&b);
    assert_int_equal(ppb_case_list_push(&l, &a), PPB_OK);
    assert_int_equal(ppb_case_list_push(&l, &b), PPB_OK);
    ppb_err err;
    assert_int_equal(ppb_matrix_override(&l, "impl", "nonsense", &err), PPB_EINPUT);
    assert_int_equal(l.n, 2);
    assert_int_equal(ppb_matrix_override(&l, "impl", "vllm-triton", &err), PPB_OK);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.items[0].config.impl, PPB_IMPL_VLLM_TRITON);
    assert_non_null(strstr(l.items[0].key, "impl=vllm-triton"));
    ppb_case_list_free(&l);
}

static void test_every_impl_and_config_of_a_shape_gets_the_same_inputs(void **state)
{
    (void)state;
    ppb_case builtin = prefill_case(), triton = prefill_case(), other = prefill_case(), shape = prefill_case();
    triton.config.impl = PPB_IMPL_VLLM_TRITON;
    ppb_case_make_key(&triton);
    other.config.block_m = 32;
    ppb_case_make_key(&other);
    shape.shape.query_len += 1;
    ppb_case_make_key(&shape);
    char key[PPB_CASE_KEY_MAX];
    ppb_case_shape_key(&builtin, key, sizeof key);
    assert_true(ppb_case_seed(7, &builtin) == ppb_case_input_seed(7, key));
    assert_true(ppb_case_seed(7, &builtin) == ppb_case_seed(7, &triton));
    assert_true(ppb_case_seed(7, &builtin) == ppb_case_seed(7, &other));
    assert_true(ppb_case_seed(7, &builtin) != ppb_case_seed(7, &shape));
    /* runs stored before: the case key without impl */
    assert_true(ppb_case_seed_per_config(7, &builtin) == ppb_case_input_seed(7, builtin.key));
    assert_true(ppb_case_seed_per_config(7, &builtin) == ppb_case_seed_per_config(7, &triton));
    assert_true(ppb_case_seed_per_config(7, &builtin) != ppb_case_seed_per_config(7, &other));
}

/* ---- the loader ---------------------------------------------------------------------- */

static int teardown_loader(void **state)
{
    (void)state;
    ppb_impl_unload_all();
    return 0;
}

static const ppb_impl_info *find_info(const ppb_impl_info *infos, int n, const char *file)
{
    for (int i = 0; i < n; i++)
        if (strstr(infos[i].path, file))
            return &infos[i];
    fail_msg("%s was not on the search path", file);
    return NULL;
}

/* The listing of one library after adding the folder of $dir_env to the search path. */
static ppb_impl_info scanned(const char *dir_env, const char *file)
{
    ppb_impl_add_search_path(env_dir(dir_env));
    ppb_impl_info *infos = NULL;
    int n = 0;
    ppb_err err;
    assert_int_equal(ppb_impl_scan(&infos, &n, &err), PPB_OK);
    ppb_impl_info f = *find_info(infos, n, file);
    free(infos);
    return f;
}

static void test_example_plugin_is_listed_with_its_table(void **state)
{
    (void)state;
    ppb_impl_info f = scanned("PPB_PLUGIN_DIR", "/libppbk_example_cpu.so");
    assert_true(f.usable);
    assert_string_equal(f.name, "example-cpu");
    assert_int_equal(f.abi_version, PPBK_ABI_VERSION);
    assert_int_equal(f.backends, PPBK_BACKEND_CPU);
    assert_true(f.has_prefill && f.has_decode_v1 && f.has_decode_v2);
    assert_int_equal(strlen(f.checksum), 16);
}

static void test_each_broken_library_says_why(void **state)
{
    (void)state;
    ppb_impl_add_search_path(env_dir("PPB_BAD_PLUGIN_DIR"));
    ppb_impl_info *infos = NULL;
    int n = 0;
    ppb_err err;
    assert_int_equal(ppb_impl_scan(&infos, &n, &err), PPB_OK);
    const struct {
        const char *file, *says;
    } want[] = {
        {"/libppbk_bad_nosym.so", "no symbol ppbk_entry"},
        {"/libppbk_bad_version.so", "kernel ABI version 999"},
        {"/libppbk_bad_null.so", "returned no table"},
        {"/libppbk_bad_name.so", "invalid implementation name"},
        {"/libppbk_bad_version.so", "this ppbench loads versions 2 to 6"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const ppb_impl_info *f = find_info(infos, n, want[i].file);
        assert_false(f->usable);
        if (!strstr(f->error, want[i].says))
            fail_msg("%s: '%s' does not say '%s'", want[i].file, f->error, want[i].says);
    }
    /* A library that loads fine but whose launch crashes is usable until it runs. */
    assert_true(find_info(infos, n, "/libppbk_bad_crash.so")->usable);
    free(infos);
}

/* A plugin that fills its whole message buffer without a NUL is read no
 * further than the buffer (ASan: a stack-buffer-overflow before). */
static void test_unterminated_plugin_message_is_bounded(void **state)
{
    (void)state;
    ppb_impl_add_search_path(env_dir("PPB_BAD_PLUGIN_DIR"));
    ppb_err err;
    int v;
    ppb_case c = prefill_case();
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, "plugin:bad-nonul", &v, &err), PPB_OK);
    c.config.impl = v;
    ppb_impl_call call;
    ppbk_device cpu = {PPBK_BACKEND_CPU, 0, 0, 1, 2, 0};
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "impl plugin:bad-nonul: AAAA"));
    assert_true(strlen(err.msg) < sizeof err.msg);
}

/* A plugin's strings are cleaned of terminal control characters when read,
 * and resource figures no kernel can have are an error, not stored. */
static void test_plugin_strings_and_resources_are_checked(void **state)
{
    (void)state;
    ppb_impl_info f = scanned("PPB_BAD_PLUGIN_DIR", "/libppbk_bad_resources.so");
    assert_true(f.usable);
    assert_string_equal(f.version, "1?]0;owned??2");
    ppb_err err;
    int v;
    ppb_case c = prefill_case();
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, "plugin:bad-resources", &v, &err), PPB_OK);
    c.config.impl = v;
    ppb_impl_call call;
    ppbk_device cpu = {PPBK_BACKEND_CPU, 0, 0, 1, 2, 0};
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_OK);
    ppb_resources res;
    assert_int_equal(ppb_impl_prepare(&call, &res, &err), PPB_EFAIL);
    assert_non_null(strstr(err.msg, "impl bad-resources: prepare: reported resources no kernel has (registers 2147483647"));
}

static void test_bind_refuses_with_the_reason(void **state)
{
    (void)state;
    ppb_impl_add_search_path(env_dir("PPB_PLUGIN_DIR"));
    ppb_err err;
    int v;
    ppb_case c = prefill_case();
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, "plugin:example-cpu", &v, &err), PPB_OK);
    c.config.impl = v;
    ppb_impl_call call;
    ppbk_device cpu = {PPBK_BACKEND_CPU, 0, 0, 1, 2, 0}, gpu = {PPBK_BACKEND_CUDA, 0, 90, 32, 132, 232448};
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_OK);
    assert_int_equal(call.prefill.num_heads, 4);
    assert_int_equal(call.prefill_cfg.block_m, c.config.block_m);
    /* No CUDA backend in the example. */
    assert_int_equal(ppb_impl_bind(&call, &c, &gpu, NULL, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "no cuda backend"));
    /* The plugin's own refusal comes back with its name. */
    c.config.block_m = 256;
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "impl plugin:example-cpu: "));
    /* A plugin of the current ABI sees num_stages and refuses a depth it cannot honour. */
    c = prefill_case();
    c.config.impl = v;
    c.config.num_stages = 2;
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "impl plugin:example-cpu: num_stages 2: this implementation has no pipelining"));
    /* path= belongs to the built-in kernels. */
    c = prefill_case();
    c.config.impl = v;
    c.config.path = PPB_PATH_SIMT;
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_EREFUSED);
    /* A name nobody provides. */
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, "plugin:nobody", &v, &err), PPB_OK);
    c.config.impl = v;
    c.config.path = PPB_PATH_AUTO;
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "no plugin named 'nobody'"));
    /* Asked for by name (--impl, a proposal's side), a missing one is bad input, said with where it was looked
     * for; builtin and a plugin that loads are there. */
    assert_int_equal(ppb_impl_require(v, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "no plugin named 'nobody' on the search path ("));
    assert_int_equal(ppb_impl_require(PPB_IMPL_BUILTIN, &err), PPB_OK);
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, "plugin:example-cpu", &v, &err), PPB_OK);
    assert_int_equal(ppb_impl_require(v, &err), PPB_OK);
    c.config.impl = PPB_IMPL_VLLM_CUDA;
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "PPB_VLLM_SOURCE"));
}

static ppb_case decode_case(int version)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.seq_len = 100;
    c.shape.num_heads = 4;
    c.shape.num_kv_heads = 2;
    c.shape.head_dim = 64;
    c.config.version = version;
    ppb_case_make_key(&c);
    return c;
}

static int plugin_impl(const char *name)
{
    ppb_err err;
    int v = -1;
    assert_int_equal(ppb_field_parse_value(PPB_F_IMPL, name, &v, &err), PPB_OK);
    return v;
}

/* A table of kernel ABI version 2 (no context) still loads, through the
 * adapter: listed with its version, opened once, and every call (refuse with
 * its note, prepare's figures, launch's failure, decode_v1's refusal) reaches
 * the version-2 function; a kernel it lacks is refused as for any plugin. */
static void test_version2_table_loads_through_the_adapter(void **state)
{
    (void)state;
    ppb_impl_info f = scanned("PPB_BAD_PLUGIN_DIR", "/libppbk_bad_abi2.so");
    if (!f.usable)
        fail_msg("the version-2 plugin is unusable: %s", f.error);
    assert_string_equal(f.name, "abi2-plugin");
    assert_int_equal(f.abi_version, 2);
    assert_true(f.adapted);
    assert_true(f.has_prefill && f.has_decode_v1 && !f.has_decode_v2);
    ppb_err err;
    ppb_case c = prefill_case();
    c.config.impl = plugin_impl("plugin:abi2-plugin");
    ppbk_device cpu = {PPBK_BACKEND_CPU, 0, 0, 1, 2, 0}, gpu = {PPBK_BACKEND_CUDA, 0, 90, 32, 132, 232448};
    ppb_impl_call call;
    assert_int_equal(ppb_impl_bind(&call, &c, &gpu, NULL, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "no cuda backend"));
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_OK);
    assert_string_equal(call.note, "version-2 table, opened 1 time(s)");
    assert_false(call.builtin);
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_OK);
    assert_string_equal(call.note, "version-2 table, opened 1 time(s)"); /* opened once per process */
    ppb_resources res;
    assert_int_equal(ppb_impl_prepare(&call, &res, &err), PPB_OK);
    assert_true(res.known);
    assert_int_equal(res.registers, 42);
    assert_int_equal(res.max_threads, 128);
    assert_int_equal(ppb_impl_launch(&call, NULL, &err), PPB_EFAIL);
    assert_string_equal(err.msg, "impl abi2-plugin: launch: the version-2 launch was reached (it computes nothing)");
    /* Version 2 has no num_stages: a case that sets it is refused before the plugin is asked. */
    c.config.num_stages = 3;
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_EREFUSED);
    assert_string_equal(err.msg, "impl plugin:abi2-plugin: built against kernel ABI version 2, which has no "
                                 "num_stages: it cannot honour num_stages=3; rebuild it against "
                                 "kernels/ppb_kernel_abi.h (version 6)");
    ppb_case d = decode_case(1);
    d.config.impl = c.config.impl;
    assert_int_equal(ppb_impl_bind(&call, &d, &cpu, NULL, &err), PPB_EREFUSED);
    assert_string_equal(err.msg, "impl plugin:abi2-plugin: the version-2 decode_v1 refuse was reached (version 1)");
    d = decode_case(2);
    d.config.impl = c.config.impl;
    assert_int_equal(ppb_impl_bind(&call, &d, &cpu, NULL, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "provides no paged_attention v2 kernel"));
}

/* A table of kernel ABI version 3, built before version 4 appended num_stages to
 * the prefill config, loads as it is (the same table; it reads the config's
 * first members, which kept their places) and runs every case that leaves
 * num_stages at its default, 0. One that sets it would be run at the plugin's
 * own depth under a key that asks for another: refused, naming the field,
 * without reaching the plugin. */
static void test_version3_table_is_refused_the_parameters_it_cannot_see(void **state)
{
    (void)state;
    ppb_impl_info f = scanned("PPB_BAD_PLUGIN_DIR", "/libppbk_bad_abi3.so");
    if (!f.usable)
        fail_msg("the version-3 plugin is unusable: %s", f.error);
    assert_int_equal(f.abi_version, 3);
    assert_false(f.adapted);
    ppb_err err;
    ppb_case c = prefill_case();
    c.config.impl = plugin_impl("plugin:abi3-plugin");
    ppbk_device cpu = {PPBK_BACKEND_CPU, 0, 0, 1, 2, 0};
    ppb_impl_call call;
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_OK);
    assert_string_equal(call.note, "version-3 table");
    assert_int_equal(call.prefill_cfg.num_stages, 0);
    /* Its ops tables end before version 5's kv_layout: vLLM's layout, whatever lies past them;
     * and before version 6's stage: none, so staging does nothing (its table's would fail). */
    assert_int_equal(call.kv_layout, PPB_KV_LAYOUT_VLLM);
    assert_null(call.stage);
    assert_int_equal(ppb_impl_stage(&call, NULL, &err), PPB_OK);
    for (int stages = 1; stages <= 8; stages *= 2) {
        c.config.num_stages = stages;
        memset(&err, 0, sizeof err);
        assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_EREFUSED);
        char want[200];
        snprintf(want, sizeof want,
                 "impl plugin:abi3-plugin: built against kernel ABI version 3, which has no num_stages: it cannot "
                 "honour num_stages=%d; rebuild it against kernels/ppb_kernel_abi.h (version 6)",
                 stages);
        assert_string_equal(err.msg, want);
    }
}

/* Version 5: an ops table says which paged-cache layout its kernel reads; one
 * ppbench does not know refuses the case, naming the value. The example
 * plugin's FLASH build says FLASH. */
static void test_kv_layout_is_read_and_checked(void **state)
{
    (void)state;
    ppb_impl_info f = scanned("PPB_BAD_PLUGIN_DIR", "/libppbk_bad_layout.so");
    assert_true(f.usable);
    ppb_err err;
    ppb_case c = prefill_case();
    c.config.impl = plugin_impl("plugin:bad-layout");
    ppbk_device cpu = {PPBK_BACKEND_CPU, 0, 0, 1, 2, 0};
    ppb_impl_call call;
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_EREFUSED);
    assert_string_equal(err.msg, "impl plugin:bad-layout: its kernel reads the paged cache in layout 7, which this "
                                 "ppbench does not know (PPB_KV_LAYOUT_*, kernels/attention_args.h)");
    ppb_impl_add_search_path(env_dir("PPB_PLUGIN_DIR"));
    c.config.impl = plugin_impl("plugin:example-cpu-flash");
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_OK);
    assert_int_equal(call.kv_layout, PPB_KV_LAYOUT_FLASH);
    c.config.impl = plugin_impl("plugin:example-cpu");
    assert_int_equal(ppb_impl_bind(&call, &c, &cpu, NULL, &err), PPB_OK);
    assert_int_equal(call.kv_layout, PPB_KV_LAYOUT_VLLM);
}

/* The built-in table and its context are the backend's, passed to every bind:
 * each call receives that context, a backend without one runs builtin cases
 * itself, and two backends' contexts never mix. */
typedef struct fake_ctx {
    int refused, prepared, launched;
} fake_ctx;

static int fake_refuse(void *ctx, const ppbk_device *d, const ppbk_prefill_config *c, const ppb_prefill_args *s,
                       char *why, size_t n)
{
    (void)d, (void)c, (void)s;
    ((fake_ctx *)ctx)->refused++;
    snprintf(why, n, "note of context %p", ctx);
    return PPBK_OK;
}

static int fake_prepare(void *ctx, const ppbk_device *d, const ppbk_prefill_config *c, const ppb_prefill_args *s,
                        ppbk_resources *r, char *why, size_t n)
{
    (void)d, (void)c, (void)s, (void)why, (void)n;
    ((fake_ctx *)ctx)->prepared++;
    r->registers = 7;
    return PPBK_OK;
}

static int fake_launch(void *ctx, const ppbk_device *d, const ppbk_prefill_config *c, const ppb_prefill_args *a,
                       void *stream, char *why, size_t n)
{
    (void)d, (void)c, (void)a, (void)stream;
    ((fake_ctx *)ctx)->launched++;
    snprintf(why, n, "launched on context %p", ctx);
    return PPBK_FAILED;
}

static void test_builtin_calls_get_the_backends_context(void **state)
{
    (void)state;
    static const ppbk_prefill_ops ops = {fake_refuse, fake_launch, fake_prepare, PPB_KV_LAYOUT_VLLM, NULL};
    static const ppbk_impl table = {.abi_version = PPBK_ABI_VERSION, .struct_size = sizeof(ppbk_impl),
                                    .name = "builtin", .backends = PPBK_BACKEND_CUDA, .prefill = &ops};
    fake_ctx one = {0}, two = {0};
    ppb_impl_ref first = {&table, &one}, second = {&table, &two};
    ppbk_device gpu = {PPBK_BACKEND_CUDA, 0, 90, 32, 132, 232448};
    ppb_case c = prefill_case();
    ppb_impl_call a, b;
    ppb_err err;
    assert_int_equal(ppb_impl_bind(&a, &c, &gpu, NULL, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "runs its built-in kernels itself"));
    assert_int_equal(ppb_impl_bind(&a, &c, &gpu, &first, &err), PPB_OK);
    assert_int_equal(ppb_impl_bind(&b, &c, &gpu, &second, &err), PPB_OK);
    assert_true(a.builtin && b.builtin);
    assert_ptr_equal(a.ctx, &one);
    assert_ptr_equal(b.ctx, &two);
    char want[64];
    snprintf(want, sizeof want, "note of context %p", (void *)&one);
    assert_string_equal(a.note, want);
    ppb_resources res;
    assert_int_equal(ppb_impl_prepare(&a, &res, &err), PPB_OK);
    assert_int_equal(res.registers, 7);
    assert_int_equal(ppb_impl_launch(&b, NULL, &err), PPB_EFAIL);
    /* The built-in kernels' messages carry no "impl NAME: " prefix. */
    snprintf(want, sizeof want, "launched on context %p", (void *)&two);
    assert_string_equal(err.msg, want);
    assert_int_equal(one.refused, 1);
    assert_int_equal(one.prepared, 1);
    assert_int_equal(one.launched, 0);
    assert_int_equal(two.refused, 1);
    assert_int_equal(two.prepared, 0);
    assert_int_equal(two.launched, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_is_default_and_left_out_of_the_key),
        cmocka_unit_test(test_named_impls_round_trip_through_the_key),
        cmocka_unit_test(test_plugin_names_register_once),
        cmocka_unit_test(test_long_plugin_names_survive_the_key),
        cmocka_unit_test(test_bad_impl_values_are_refused),
        cmocka_unit_test(test_override_sets_every_case_and_drops_duplicates),
        cmocka_unit_test(test_every_impl_and_config_of_a_shape_gets_the_same_inputs),
        cmocka_unit_test_teardown(test_example_plugin_is_listed_with_its_table, teardown_loader),
        cmocka_unit_test_teardown(test_each_broken_library_says_why, teardown_loader),
        cmocka_unit_test_teardown(test_bind_refuses_with_the_reason, teardown_loader),
        cmocka_unit_test_teardown(test_unterminated_plugin_message_is_bounded, teardown_loader),
        cmocka_unit_test_teardown(test_plugin_strings_and_resources_are_checked, teardown_loader),
        cmocka_unit_test_teardown(test_version2_table_loads_through_the_adapter, teardown_loader),
        cmocka_unit_test_teardown(test_version3_table_is_refused_the_parameters_it_cannot_see, teardown_loader),
        cmocka_unit_test_teardown(test_kv_layout_is_read_and_checked, teardown_loader),
        cmocka_unit_test(test_builtin_calls_get_the_backends_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
