/* How long a bare CUDA program takes to start on this machine: the floor under ppbench's
 * `device` phase (docs/BENCHMARKS.md, the harness's own cost). Each step timed apart:
 *
 *   gcc -O2 tests/gpu/driver_start.c -I$CUDA/include -L$CUDA/lib64 -lcudart -ldl -o driver_start
 *   ./driver_start        (run it a few times: the first process after boot pays more)
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double lap(double *t)
{
    double n = now_ms(), d = n - *t;
    *t = n;
    return d;
}

int main(void)
{
    double t = now_ms();
    const double start = t;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "driver_start: no CUDA device\n");
        return 1;
    }
    printf("cuInit (cudaGetDeviceCount)       %7.1f ms\n", lap(&t));
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "driver_start: no context on device 0\n");
        return 1;
    }
    printf("context (cudaSetDevice, cudaFree) %7.1f ms\n", lap(&t));
    printf("CUDA runtime, total               %7.1f ms\n", now_ms() - start);
    /* NVML, as ppbench opens it (dlopen, beside the driver there) */
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    int (*init)(void) = nvml ? (int (*)(void))dlsym(nvml, "nvmlInit_v2") : NULL;
    if (init && init() == 0)
        printf("NVML (dlopen, nvmlInit)           %7.1f ms\n", lap(&t));
    else
        printf("NVML: not available\n");
    return 0;
}
