/* fake_cuda.c - a stand-in for libcuda.so, built only for the tests: it
 * exports the Driver API entry points the probe uses, with the same
 * signatures and CUresult codes, over an emulated device. Nothing is
 * really allocated: device memory is bookkeeping.
 *
 * Configuration, read at every cuInit() (sizes in bytes, or with a K, M, G
 * or T suffix meaning KiB ... TiB):
 *   FAKECUDA_DEVICES       number of devices (default 1; 0: cuInit fails
 *                          with CUDA_ERROR_NO_DEVICE, as the real driver does)
 *   FAKECUDA_TOTAL         memory per device (default 16G)
 *   FAKECUDA_GRANULARITY   allocations are rounded up to this (default 2M)
 *   FAKECUDA_CONTEXT       memory each context takes (default 300M)
 *   FAKECUDA_OTHER         memory held by "other processes" (default 0)
 *   FAKECUDA_NAME          device name (default "Fake CUDA Device")
 *   FAKECUDA_FAIL_INIT     cuInit() returns this CUresult (default 0)
 *   FAKECUDA_FAIL_ALLOC_AT the Nth cuMemAlloc_v2 since cuInit (1-based)
 *                          returns FAKECUDA_FAIL_ALLOC_CODE (default 999,
 *                          CUDA_ERROR_UNKNOWN)
 *   FAKECUDA_SIGNAL_AT     the Nth cuMemAlloc_v2 succeeds, then raises SIGINT
 *
 * Like the real driver: every call but cuGetError* needs cuInit() first
 * (CUDA_ERROR_NOT_INITIALIZED); memory calls need a current context
 * (CUDA_ERROR_INVALID_CONTEXT); cuMemAlloc_v2(0) is CUDA_ERROR_INVALID_VALUE;
 * a full device gives CUDA_ERROR_OUT_OF_MEMORY; cuCtxCreate pushes on the
 * thread's context stack, cuCtxDestroy pops if current, cuCtxSetCurrent
 * replaces the top (NULL pops); destroying a context drops its allocations.
 *
 * Leak detection: fakecuda_*() report live allocations and contexts,
 * allocations dropped with their context instead of freed, and allocations
 * freed without a byte of them written (cuMemsetD8_v2). When the library is
 * unloaded (dlclose or process exit) with anything still live or dropped,
 * it prints the leak and ends the process with status 86. */
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_UNKNOWN = 999,
};

/* The exported API (declared first, as -Wmissing-prototypes wants). */
CUresult cuGetErrorString(CUresult error, const char **str);
CUresult cuGetErrorName(CUresult error, const char **str);
CUresult cuInit(unsigned int flags);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetCurrent(CUcontext *pctx);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuCtxDestroy(CUcontext ctx);
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n);
/* The pre-CUDA-3.2 entry points, 32-bit sizes and pointers. A 64-bit
 * program must never call them: they abort. */
CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev);
CUresult cuMemGetInfo(unsigned int *free_bytes, unsigned int *total_bytes);
CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize);
CUresult cuMemFree(unsigned int dptr);
CUresult cuMemsetD8(unsigned int dst, unsigned char uc, unsigned int n);
/* Test queries. */
int fakecuda_live_allocations(void);
int fakecuda_live_contexts(void);
int fakecuda_dropped_allocations(void);
int fakecuda_untouched_frees(void);
int fakecuda_alloc_calls(void);
unsigned long long fakecuda_used_bytes(int dev);

#define MAX_DEVICES 8
#define MAX_CONTEXTS 16

struct CUctx_st {
    int dev;
    bool primary;
    bool alive;
};

struct allocation {
    CUdeviceptr ptr;
    size_t size, rounded;
    struct CUctx_st *ctx;
    bool touched;
};

static struct {
    /* configuration */
    int devices;
    unsigned long long total, granularity, context, other;
    char name[128];
    int fail_alloc_at, fail_alloc_code, signal_at;
    /* state */
    bool initialized;
    struct CUctx_st ctx[MAX_CONTEXTS];
    struct CUctx_st *primary[MAX_DEVICES];
    int primary_refs[MAX_DEVICES];
    struct CUctx_st *stack[MAX_CONTEXTS];
    int depth;
    struct allocation *allocs;
    size_t nallocs, cap;
    CUdeviceptr next_ptr;
    /* counters */
    int alloc_calls, dropped, untouched;
} F = { .next_ptr = 0x7f0000000000ull };

static unsigned long long env_size(const char *name, unsigned long long def)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (end == s || *end) {
        fprintf(stderr, "fakecuda: bad %s=%s\n", name, s);
        abort();
    }
    return v << shift;
}

static void read_config(void)
{
    F.devices = (int)env_size("FAKECUDA_DEVICES", 1);
    if (F.devices > MAX_DEVICES)
        F.devices = MAX_DEVICES;
    F.total = env_size("FAKECUDA_TOTAL", 16ull << 30);
    F.granularity = env_size("FAKECUDA_GRANULARITY", 2ull << 20);
    if (F.granularity == 0)
        F.granularity = 1;
    F.context = env_size("FAKECUDA_CONTEXT", 300ull << 20);
    F.other = env_size("FAKECUDA_OTHER", 0);
    const char *name = getenv("FAKECUDA_NAME");
    snprintf(F.name, sizeof F.name, "%s", name && *name ? name : "Fake CUDA Device");
    F.fail_alloc_at = (int)env_size("FAKECUDA_FAIL_ALLOC_AT", 0);
    F.fail_alloc_code = (int)env_size("FAKECUDA_FAIL_ALLOC_CODE", CUDA_ERROR_UNKNOWN);
    F.signal_at = (int)env_size("FAKECUDA_SIGNAL_AT", 0);
}

/* ---- errors ------------------------------------------------------------ */

static const struct {
    CUresult code;
    const char *name, *text;
} errors[] = {
    { CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
    { CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
    { CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
    { CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
    { CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
    { CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
    { CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
    { CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static CUresult lookup_error(CUresult error, const char **str, bool name)
{
    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        if (errors[i].code == error) {
            *str = name ? errors[i].name : errors[i].text;
            return CUDA_SUCCESS;
        }
    }
    *str = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **str) { return lookup_error(error, str, false); }
CUresult cuGetErrorName(CUresult error, const char **str) { return lookup_error(error, str, true); }

/* ---- devices ----------------------------------------------------------- */

CUresult cuInit(unsigned int flags)
{
    read_config();
    F.alloc_calls = 0;
    const char *fail = getenv("FAKECUDA_FAIL_INIT");
    if (fail && *fail && strcmp(fail, "0") != 0)
        return (CUresult)atoi(fail);
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (F.devices <= 0)
        return CUDA_ERROR_NO_DEVICE;
    F.initialized = true;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = F.devices;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= F.devices)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

static bool bad_device(CUdevice dev)
{
    return dev < 0 || dev >= F.devices;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (bad_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", F.name);
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (bad_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = (size_t)F.total;
    return CUDA_SUCCESS;
}

/* ---- memory accounting ------------------------------------------------- */

unsigned long long fakecuda_used_bytes(int dev)
{
    unsigned long long used = F.other;
    for (int i = 0; i < MAX_CONTEXTS; i++)
        if (F.ctx[i].alive && F.ctx[i].dev == dev)
            used += F.context;
    for (size_t i = 0; i < F.nallocs; i++)
        if (F.allocs[i].ctx->dev == dev)
            used += F.allocs[i].rounded;
    return used;
}

static bool room_for(int dev, unsigned long long bytes)
{
    unsigned long long used = fakecuda_used_bytes(dev);
    return used <= F.total && bytes <= F.total - used;
}

/* ---- contexts ---------------------------------------------------------- */

static struct CUctx_st *current(void)
{
    if (F.depth == 0)
        return NULL;
    struct CUctx_st *c = F.stack[F.depth - 1];
    return c && c->alive ? c : NULL;
}

static struct CUctx_st *new_context(int dev, bool primary, CUresult *r)
{
    if (!room_for(dev, F.context)) {
        *r = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    for (int i = 0; i < MAX_CONTEXTS; i++) {
        if (!F.ctx[i].alive) {
            F.ctx[i] = (struct CUctx_st){ .dev = dev, .primary = primary, .alive = true };
            *r = CUDA_SUCCESS;
            return &F.ctx[i];
        }
    }
    *r = CUDA_ERROR_OUT_OF_MEMORY;
    return NULL;
}

/* Destroys a context: its allocations go with it (counted as dropped). */
static void kill_context(struct CUctx_st *c)
{
    for (size_t i = 0; i < F.nallocs;) {
        if (F.allocs[i].ctx == c) {
            F.dropped++;
            F.allocs[i] = F.allocs[--F.nallocs];
        } else {
            i++;
        }
    }
    c->alive = false;
}

static bool valid_context(CUcontext c)
{
    return c && c >= F.ctx && c < F.ctx + MAX_CONTEXTS && c->alive;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (bad_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!F.primary[dev]) {
        CUresult r;
        F.primary[dev] = new_context(dev, true, &r);
        if (!F.primary[dev])
            return r;
    }
    F.primary_refs[dev]++;
    *pctx = F.primary[dev];
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (bad_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (F.primary_refs[dev] <= 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--F.primary_refs[dev] == 0) {
        kill_context(F.primary[dev]);
        F.primary[dev] = NULL;
    }
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) {
        if (F.depth > 0)
            F.depth--;
        return CUDA_SUCCESS;
    }
    if (!valid_context(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (F.depth == 0)
        F.depth = 1;
    F.stack[F.depth - 1] = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = current();
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    (void)flags;
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (bad_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (F.depth >= MAX_CONTEXTS)
        return CUDA_ERROR_UNKNOWN;
    CUresult r;
    struct CUctx_st *c = new_context(dev, false, &r);
    if (!c)
        return r;
    F.stack[F.depth++] = c;
    *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_context(ctx) || ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (F.depth > 0 && F.stack[F.depth - 1] == ctx)
        F.depth--;
    kill_context(ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }

/* ---- memory ------------------------------------------------------------ */

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct CUctx_st *c = current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!free_bytes || !total_bytes)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long used = fakecuda_used_bytes(c->dev);
    *free_bytes = (size_t)(used < F.total ? F.total - used : 0);
    *total_bytes = (size_t)F.total;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct CUctx_st *c = current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    F.alloc_calls++;
    if (F.fail_alloc_at > 0 && F.alloc_calls == F.fail_alloc_at)
        return F.fail_alloc_code;
    unsigned long long g = F.granularity;
    if (bytesize > F.total)
        return CUDA_ERROR_OUT_OF_MEMORY;
    unsigned long long rounded = (bytesize + g - 1) / g * g;
    if (!room_for(c->dev, rounded))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (F.nallocs == F.cap) {
        size_t cap = F.cap ? F.cap * 2 : 64;
        struct allocation *a = realloc(F.allocs, cap * sizeof *a);
        if (!a)
            return CUDA_ERROR_OUT_OF_MEMORY;
        F.allocs = a;
        F.cap = cap;
    }
    CUdeviceptr p = F.next_ptr;
    F.next_ptr += rounded;
    F.allocs[F.nallocs++] = (struct allocation){
        .ptr = p, .size = bytesize, .rounded = (size_t)rounded, .ctx = c,
    };
    *dptr = p;
    if (F.signal_at > 0 && F.alloc_calls == F.signal_at)
        raise(SIGINT);
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!current())
        return CUDA_ERROR_INVALID_CONTEXT;
    for (size_t i = 0; i < F.nallocs; i++) {
        if (F.allocs[i].ptr == dptr) {
            if (!F.allocs[i].touched)
                F.untouched++;
            F.allocs[i] = F.allocs[--F.nallocs];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n)
{
    (void)uc;
    if (!F.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!current())
        return CUDA_ERROR_INVALID_CONTEXT;
    for (size_t i = 0; i < F.nallocs; i++) {
        struct allocation *a = &F.allocs[i];
        if (dst >= a->ptr && dst - a->ptr <= a->size && n <= a->size - (dst - a->ptr)) {
            if (n > 0)
                a->touched = true;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static void legacy(const char *name)
{
    fprintf(stderr, "fakecuda: %s: the 32-bit pre-CUDA-3.2 entry point was called\n", name);
    abort();
}

CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    (void)bytes, (void)dev;
    legacy("cuDeviceTotalMem");
    return CUDA_ERROR_UNKNOWN;
}

CUresult cuMemGetInfo(unsigned int *free_bytes, unsigned int *total_bytes)
{
    (void)free_bytes, (void)total_bytes;
    legacy("cuMemGetInfo");
    return CUDA_ERROR_UNKNOWN;
}

CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize)
{
    (void)dptr, (void)bytesize;
    legacy("cuMemAlloc");
    return CUDA_ERROR_UNKNOWN;
}

CUresult cuMemFree(unsigned int dptr)
{
    (void)dptr;
    legacy("cuMemFree");
    return CUDA_ERROR_UNKNOWN;
}

CUresult cuMemsetD8(unsigned int dst, unsigned char uc, unsigned int n)
{
    (void)dst, (void)uc, (void)n;
    legacy("cuMemsetD8");
    return CUDA_ERROR_UNKNOWN;
}

/* ---- leak detection ---------------------------------------------------- */

int fakecuda_live_allocations(void) { return (int)F.nallocs; }
int fakecuda_dropped_allocations(void) { return F.dropped; }
int fakecuda_untouched_frees(void) { return F.untouched; }
int fakecuda_alloc_calls(void) { return F.alloc_calls; }

int fakecuda_live_contexts(void)
{
    int n = 0;
    for (int i = 0; i < MAX_CONTEXTS; i++)
        n += F.ctx[i].alive;
    return n;
}

__attribute__((destructor)) static void at_unload(void)
{
    int allocs = fakecuda_live_allocations(), ctxs = fakecuda_live_contexts();
    free(F.allocs);
    F.allocs = NULL;
    if (allocs || ctxs || F.dropped) {
        fprintf(stderr,
                "fakecuda: leak at unload: %d live allocation(s), %d live context(s), "
                "%d allocation(s) dropped with their context\n",
                allocs, ctxs, F.dropped);
        _exit(86);
    }
}
