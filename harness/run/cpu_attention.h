/* The kernels' tiled algorithms, run on the CPU in fp32 (used by backend_cpu.c).
 *
 * Not a second reference: these follow the GPU kernels step by step (KERNELS.md)
 * so that tile edges, partitions, the reduce and storage rounding behave like
 * the kernels do, and the float64 reference (reference.c) judges them.
 *  - prefix prefill: one work item per (sequence, head, BLOCK_M tile); context in
 *    BLOCK_N steps through the block table, then new tokens up to the diagonal;
 *    online softmax as vLLM v0.6.3's Triton _fwd_kernel (normalised accumulator,
 *    probabilities rounded to the storage dtype before P x V).
 *  - paged attention v1: one pass over the whole sequence per (sequence, head),
 *    all logits held at once (the kernel's shared memory).
 *  - paged attention v2: one item per (sequence, head, partition) writing a
 *    normalised partial output tmp_out (storage dtype) and max_logits / exp_sums
 *    (fp32), then vLLM's reduce.
 *
 * v2 scratch and the PARTITION_SIZE mismatch: tmp_out / exp_sums / max_logits are
 * sized with the host's partition count, ceil(max_seq_len / host_partition_size),
 * and indexed with the kernel's, ceil(max_seq_len / partition_size), exactly like
 * vLLM's launcher (gridDim.z) and host code. Each buffer is followed by a guard
 * zone filled with a canary and large enough to absorb the whole overrun; every
 * scratch access goes through a bounds-aware helper that stays inside the one
 * allocation. In the packed layout the three buffers sit back to back (only a
 * tail guard), so an overrun lands in the neighbouring buffer, as it does on a
 * GPU when the allocator places them together. */
#ifndef PPB_CPU_ATTENTION_H
#define PPB_CPU_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "ppb_error.h"
#include "result.h"
#include "workload.h"

typedef struct cpu_attn cpu_attn;

/* The v2 scratch layout, for reports and tests. Byte counts are per buffer. */
typedef struct cpu_scratch_info {
    int used;                          /* 0: not v2 */
    int packed;
    long long host_partitions;         /* what the host sized the buffers for */
    long long kernel_partitions;       /* what the kernel indexes with */
    size_t tmp_out_bytes, exp_sums_bytes, max_logits_bytes;   /* host-sized */
    size_t tmp_out_guard, exp_sums_guard, max_logits_guard;   /* guard after each (packed: 0, 0, tail) */
    size_t region_bytes;               /* the whole allocation */
} cpu_scratch_info;

/* Plan case `c` (its config; its shape must be the workload's: A/B runs share
 * one workload between configs): per-worker scratch and, for v2, the guarded
 * region. `c` and `w` (with tensors) must stay alive until cpu_attn_destroy.
 * packed_scratch selects the packed v2 layout. A launch runs its items on at
 * most `threads` threads (0: every thread of ppb_thread_count()), the calling
 * one first: the backend's timing choice (backend_cpu.c says why one). */
int cpu_attn_create(cpu_attn **out, const ppb_case *c, const ppb_workload *w, int packed_scratch, int threads,
                    ppb_err *err);
void cpu_attn_destroy(cpu_attn *a);

/* One launch: computes every output row into out (w->out_elems elements,
 * storage dtype). Fails only if a scratch access would leave the allocation
 * (a guard sized too small: a bug, reported rather than done). */
int cpu_attn_run(cpu_attn *a, uint16_t *out, ppb_err *err);

/* The threads a launch asked for `threads` (cpu_attn_create's) runs on now: at
 * most ppb_thread_count(), which PPBENCH_THREADS can change between launches. */
int cpu_attn_launch_threads(int threads);

/* The threads the last cpu_attn_run's items ran on (1 + the highest worker
 * index among them): what the timing measured, for tests. */
int cpu_attn_threads_used(const cpu_attn *a);

/* v2: fill the scratch buffers and guard zones with the canary and forget the
 * recorded write extents (before a checked run). No-op otherwise. */
void cpu_attn_reset_scratch(cpu_attn *a);

/* v2: what the runs since the last reset wrote past each host-sized buffer
 * (from the recorded write extents) and how many guard canary bytes changed
 * (from a scan). All zero when not v2. */
void cpu_attn_overrun(const cpu_attn *a, ppb_overrun *ov);

void cpu_attn_scratch_info(const cpu_attn *a, cpu_scratch_info *info);

#endif
