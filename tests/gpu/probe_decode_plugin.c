/* Standalone GPU probe of a decode plugin (kernels/ppb_kernel_abi.h), apart
 * from ppbench: dlopen()s the library, runs paged attention v1 and v2 (both
 * PARTITION_SIZE 512 and 256) on one small bf16 case in vLLM's layouts with a
 * shuffled block table, and compares each against float64 attention on the
 * CPU.
 *
 *   probe_decode_plugin PLUGIN.so [DEVICE]
 *
 * Case: 2 sequences (1000 tokens, and a ragged 617 so that the two end in
 * different partitions), 8 heads over 2 kv heads, head size 128, pages of 16.
 * Exit: 0 every max abs error <= 2e-2; 1 a case failed, was refused or is
 * above that; 2 usage or a plugin that does not load; 77 no CUDA device.
 *
 * Build (toolkit under /usr/local/cuda):
 *   gcc -std=c11 -O2 -Wall -Ikernels -I/usr/local/cuda/include tests/gpu/probe_decode_plugin.c \
 *       -o probe_decode_plugin -L/usr/local/cuda/lib64 -lcudart -ldl -lm */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "ppb_kernel_abi.h"

enum { NUM_SEQS = 2, NUM_HEADS = 8, NUM_KV_HEADS = 2, HEAD = 128, PAGE = 16, MAX_SEQ = 1000, X = 8 };
static const int seq_lens[NUM_SEQS] = {MAX_SEQ, 617};
#define TOLERANCE 2e-2

/* ---- bf16 and a small deterministic generator ------------------------------------- */

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even (inputs are finite) */
    return (uint16_t)(u >> 16);
}

static double from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float uniform_pm1(void) { return (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

/* ---- error handling ----------------------------------------------------------------- */

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, bytes));
    return p;
}

static void *dev_copy(const void *host, size_t bytes)
{
    void *p = dev_alloc(bytes);
    CUDA_OK(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice));
    return p;
}

/* ---- the case ------------------------------------------------------------------------ */

typedef struct inputs {
    uint16_t *q, *k_cache, *v_cache; /* host, bf16, vLLM layouts */
    int32_t *block_table;            /* [NUM_SEQS, max_blocks] */
    int num_blocks, max_blocks;
    double *ref;                     /* [NUM_SEQS, NUM_HEADS, HEAD] */
} inputs;

/* k_cache [num_blocks, kv_heads, HEAD/X, PAGE, X]; v_cache [num_blocks, kv_heads, HEAD, PAGE] */
static size_t k_index(int block, int kvh, int token_in_page, int d)
{
    return ((((size_t)block * NUM_KV_HEADS + kvh) * (HEAD / X) + d / X) * PAGE + token_in_page) * X + d % X;
}

static size_t v_index(int block, int kvh, int token_in_page, int d)
{
    return (((size_t)block * NUM_KV_HEADS + kvh) * HEAD + d) * PAGE + token_in_page;
}

static void make_inputs(inputs *in)
{
    in->max_blocks = (MAX_SEQ + PAGE - 1) / PAGE;
    in->num_blocks = NUM_SEQS * in->max_blocks + 7; /* a few pages nobody uses */
    size_t q_n = (size_t)NUM_SEQS * NUM_HEADS * HEAD;
    size_t kv_n = (size_t)in->num_blocks * NUM_KV_HEADS * HEAD * PAGE;
    in->q = malloc(q_n * sizeof *in->q);
    in->k_cache = malloc(kv_n * sizeof *in->k_cache);
    in->v_cache = malloc(kv_n * sizeof *in->v_cache);
    in->block_table = malloc((size_t)NUM_SEQS * in->max_blocks * sizeof *in->block_table);
    in->ref = malloc(q_n * sizeof *in->ref);
    if (!in->q || !in->k_cache || !in->v_cache || !in->block_table || !in->ref) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    /* q in [-8, 8]: logits of standard deviation about 2.7 at scale 1/sqrt(128), so a
     * few keys dominate each softmax and a key read from the wrong page moves the
     * output far past the tolerance (with flat weights every output would sit near 0). */
    for (size_t i = 0; i < q_n; i++)
        in->q[i] = to_bf16(8.0f * uniform_pm1());
    for (size_t i = 0; i < kv_n; i++) {
        in->k_cache[i] = to_bf16(uniform_pm1());
        in->v_cache[i] = to_bf16(uniform_pm1());
    }
    /* A random permutation of the physical pages (Fisher-Yates): logical page j
     * of sequence s lives in page perm[s * max_blocks + j]. */
    int *perm = malloc((size_t)in->num_blocks * sizeof *perm);
    if (!perm)
        exit(1);
    for (int i = 0; i < in->num_blocks; i++)
        perm[i] = i;
    for (int i = in->num_blocks - 1; i > 0; i--) {
        int j = (int)(next_u64() % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < NUM_SEQS * in->max_blocks; i++)
        in->block_table[i] = perm[i];
    free(perm);
}

/* float64 attention through the block table, from the same bf16 values. */
static void reference(inputs *in, float sm_scale)
{
    double *p = malloc(MAX_SEQ * sizeof *p);
    if (!p)
        exit(1);
    for (int s = 0; s < NUM_SEQS; s++)
        for (int h = 0; h < NUM_HEADS; h++) {
            int kvh = h / (NUM_HEADS / NUM_KV_HEADS), len = seq_lens[s];
            const uint16_t *q = in->q + ((size_t)s * NUM_HEADS + h) * HEAD;
            double mx = -INFINITY, sum = 0;
            for (int t = 0; t < len; t++) {
                int block = in->block_table[s * in->max_blocks + t / PAGE];
                double dot = 0;
                for (int d = 0; d < HEAD; d++)
                    dot += from_bf16(q[d]) * from_bf16(in->k_cache[k_index(block, kvh, t % PAGE, d)]);
                p[t] = dot * sm_scale;
                mx = p[t] > mx ? p[t] : mx;
            }
            for (int t = 0; t < len; t++)
                sum += p[t] = exp(p[t] - mx);
            double *o = in->ref + ((size_t)s * NUM_HEADS + h) * HEAD;
            for (int d = 0; d < HEAD; d++) {
                double acc = 0;
                for (int t = 0; t < len; t++) {
                    int block = in->block_table[s * in->max_blocks + t / PAGE];
                    acc += p[t] * from_bf16(in->v_cache[v_index(block, kvh, t % PAGE, d)]);
                }
                o[d] = acc / sum;
            }
        }
    free(p);
}

/* One launch of `ops` (version 1 or 2), checked against the reference.
 * Returns 0 when within tolerance. */
static int run_case(const ppbk_decode_ops *ops, void *pctx, const ppbk_device *dev, inputs *in,
                    const ppb_decode_args *base, int version, int partition_size, cudaStream_t stream)
{
    char why[512] = "";
    char label[64];
    snprintf(label, sizeof label, version == 1 ? "v1" : "v2 partition %d", partition_size);

    ppbk_decode_config cfg = {.dtype = PPB_KDTYPE_BF16, .head_dim = HEAD, .page_size = PAGE, .sliding_window = 0,
                              .version = version, .num_threads = 128,
                              .partition_size = version == 2 ? partition_size : 0};
    ppb_decode_args shape = *base, args = *base;
    int partitions = version == 2 ? (MAX_SEQ + partition_size - 1) / partition_size : 0;
    args.max_num_partitions = shape.max_num_partitions = partitions;
    shape.q = shape.k_cache = shape.v_cache = NULL;
    shape.out = shape.tmp_out = NULL;
    shape.block_table = shape.seq_lens = NULL;
    shape.exp_sums = shape.max_logits = NULL;

    int rc = ops->refuse(pctx, dev, &cfg, &shape, why, sizeof why);
    if (rc != PPBK_OK) {
        printf("%-16s %s: %s\n", label, rc == PPBK_REFUSED ? "REFUSED" : "FAILED", why);
        return 1;
    }
    if (ops->prepare) {
        ppbk_resources r = {0};
        if (ops->prepare(pctx, dev, &cfg, &shape, &r, why, sizeof why) == PPBK_OK)
            printf("%-16s %d registers, %d B static + %d B dynamic shared memory, %d B local, %d max threads\n",
                   label, r.registers, r.static_smem, r.dynamic_smem, r.local_bytes, r.max_threads);
        else
            printf("%-16s prepare: %s\n", label, why);
    }

    size_t out_bytes = (size_t)NUM_SEQS * NUM_HEADS * HEAD * sizeof(uint16_t);
    void *tmp_out = NULL, *exp_sums = NULL, *max_logits = NULL;
    if (version == 2) {
        size_t per = (size_t)NUM_SEQS * NUM_HEADS * partitions;
        tmp_out = dev_alloc(per * HEAD * sizeof(uint16_t));
        exp_sums = dev_alloc(per * sizeof(float));
        max_logits = dev_alloc(per * sizeof(float));
    }
    args.tmp_out = tmp_out;
    args.exp_sums = exp_sums;
    args.max_logits = max_logits;
    CUDA_OK(cudaMemset(args.out, 0xff, out_bytes)); /* bf16 NaN: an unwritten output shows */

    rc = ops->launch(pctx, dev, &cfg, &args, (void *)stream, why, sizeof why);
    if (rc != PPBK_OK) {
        printf("%-16s launch %s: %s\n", label, rc == PPBK_REFUSED ? "refused" : "failed", why);
        return 1;
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaGetLastError());

    uint16_t *out = malloc(out_bytes);
    if (!out)
        exit(1);
    CUDA_OK(cudaMemcpy(out, args.out, out_bytes, cudaMemcpyDeviceToHost));
    double max_err = 0;
    int nonfinite = 0;
    for (size_t i = 0; i < (size_t)NUM_SEQS * NUM_HEADS * HEAD; i++) {
        double v = from_bf16(out[i]);
        if (!isfinite(v)) {
            nonfinite++;
            continue;
        }
        double e = fabs(v - in->ref[i]);
        max_err = e > max_err ? e : max_err;
    }
    free(out);
    if (version == 2) {
        CUDA_OK(cudaFree(tmp_out));
        CUDA_OK(cudaFree(exp_sums));
        CUDA_OK(cudaFree(max_logits));
    }
    int bad = nonfinite > 0 || max_err > TOLERANCE;
    printf("%-16s max abs error %.3e, %d non-finite: %s\n", label, max_err, nonfinite, bad ? "FAIL" : "ok");
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || argv[1][0] == '-') {
        fprintf(stderr, "usage: %s PLUGIN.so [DEVICE]\n", argv[0]);
        return 2;
    }
    int device = argc == 3 ? atoi(argv[2]) : 0;

    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    ppbk_entry_fn entry;
    void *sym = dlsym(lib, PPBK_ENTRY_SYMBOL);
    if (!sym) {
        fprintf(stderr, "%s: no %s\n", argv[1], PPBK_ENTRY_SYMBOL);
        return 2;
    }
    memcpy(&entry, &sym, sizeof entry); /* object to function pointer, as POSIX allows */
    const ppbk_impl *impl = entry();
    if (!impl || impl->abi_version != PPBK_ABI_VERSION || impl->struct_size < sizeof(ppbk_impl)) {
        fprintf(stderr, "%s: ABI version %u (size %u), this probe speaks %d (size %zu)\n", argv[1],
                impl ? impl->abi_version : 0, impl ? impl->struct_size : 0, PPBK_ABI_VERSION, sizeof(ppbk_impl));
        return 2;
    }
    printf("plugin %s, %s\nsource: %s\n", impl->name, impl->version, impl->source ? impl->source : "(none)");
    if (!(impl->backends & PPBK_BACKEND_CUDA) || !impl->decode_v1 || !impl->decode_v2) {
        fprintf(stderr, "%s: no CUDA decode v1/v2 in this plugin\n", argv[1]);
        return 2;
    }

    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count <= device) {
        fprintf(stderr, "no CUDA device %d\n", device);
        return 77;
    }
    CUDA_OK(cudaSetDevice(device));
    struct cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, device));
    ppbk_device dev = {.backend = PPBK_BACKEND_CUDA, .device_index = device, .cc = prop.major * 10 + prop.minor,
                       .warp_size = prop.warpSize, .sm_count = prop.multiProcessorCount,
                       .smem_optin = (long)prop.sharedMemPerBlockOptin};
    printf("device %d: %s, cc %d.%d, %d SMs, warp %d, %ld B shared memory per block (opt-in)\n", device, prop.name,
           prop.major, prop.minor, dev.sm_count, dev.warp_size, dev.smem_optin);

    char why[512] = "";
    void *pctx = NULL; /* the plugin's context: from its open, to every call and its close */
    if (impl->open && impl->open(&dev, &pctx, why, sizeof why) != PPBK_OK) {
        printf("open failed: %s\n", why);
        return 1;
    }

    inputs in;
    make_inputs(&in);
    float sm_scale = (float)(1.0 / sqrt((double)HEAD));
    reference(&in, sm_scale);
    double ref_max = 0;
    for (size_t i = 0; i < (size_t)NUM_SEQS * NUM_HEADS * HEAD; i++)
        ref_max = fabs(in.ref[i]) > ref_max ? fabs(in.ref[i]) : ref_max;
    printf("reference: float64, max |out| %.3f (tolerance %.0e)\n", ref_max, TOLERANCE);

    size_t kv_bytes = (size_t)in.num_blocks * NUM_KV_HEADS * HEAD * PAGE * sizeof(uint16_t);
    ppb_decode_args base = {
        .q = dev_copy(in.q, (size_t)NUM_SEQS * NUM_HEADS * HEAD * sizeof(uint16_t)),
        .k_cache = dev_copy(in.k_cache, kv_bytes),
        .v_cache = dev_copy(in.v_cache, kv_bytes),
        .out = dev_alloc((size_t)NUM_SEQS * NUM_HEADS * HEAD * sizeof(uint16_t)),
        .block_table = dev_copy(in.block_table, (size_t)NUM_SEQS * in.max_blocks * sizeof(int32_t)),
        .seq_lens = dev_copy(seq_lens, sizeof seq_lens),
        .num_seqs = NUM_SEQS,
        .num_heads = NUM_HEADS,
        .num_kv_heads = NUM_KV_HEADS,
        .head_dim = HEAD,
        .page_size = PAGE,
        .max_blocks_per_seq = in.max_blocks,
        .max_seq_len = MAX_SEQ,
        .sliding_window = 0,
        .sm_scale = sm_scale,
    };
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreate(&stream));

    int failed = 0;
    failed += run_case(impl->decode_v1, pctx, &dev, &in, &base, 1, 0, stream);
    failed += run_case(impl->decode_v2, pctx, &dev, &in, &base, 2, 512, stream);
    failed += run_case(impl->decode_v2, pctx, &dev, &in, &base, 2, 256, stream);

    CUDA_OK(cudaStreamDestroy(stream));
    if (impl->close)
        impl->close(pctx);
    printf("%s\n", failed ? "FAILED" : "PASSED");
    return failed ? 1 : 0;
}
