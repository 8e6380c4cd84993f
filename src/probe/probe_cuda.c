/* probe_cuda.c - the CUDA Driver API backend of the probe: loads libcuda
 * with dlopen() at run time (nothing is linked, no cuda.h), resolves the few
 * entry points the probe needs and wraps them in struct
 * memest_probe_backend. The tests point it at a fake libcuda; the code path
 * is the same as with a real driver. */
#include "memest/probe.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The types of cuda.h that we use, as laid out on 64-bit platforms. */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NO_DEVICE = 100,
};

/* Entry points. cuda.h maps the plain names to the _v2 ones with macros, so
 * the _v2 symbol is what a program built against it calls. For the memory
 * calls (cuMemAlloc, cuMemFree, cuMemGetInfo, cuMemsetD8, cuDeviceTotalMem)
 * the plain symbols are the pre-CUDA-3.2 ABI with 32-bit sizes and
 * pointers: those are never used. For the context calls, the plain symbols
 * have the same signature and serve as a fallback on old drivers. */
static struct {
    void *lib;
    CUresult (*Init)(unsigned int flags);
    CUresult (*DeviceGetCount)(int *count);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*DeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult (*PrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*PrimaryCtxRelease)(CUdevice dev);
    CUresult (*CtxSetCurrent)(CUcontext ctx);
    CUresult (*CtxCreate)(CUcontext *ctx, unsigned int flags, CUdevice dev);
    CUresult (*CtxDestroy)(CUcontext ctx);
    CUresult (*MemGetInfo)(size_t *free_bytes, size_t *total_bytes);
    CUresult (*MemAlloc)(CUdeviceptr *ptr, size_t bytes);
    CUresult (*MemFree)(CUdeviceptr ptr);
    CUresult (*MemsetD8)(CUdeviceptr ptr, unsigned char value, size_t n);
    CUresult (*GetErrorString)(CUresult err, const char **str);
    CUresult (*GetErrorName)(CUresult err, const char **str);
} cu;

/* Contexts handed out as opaque handles. */
struct cu_ctx {
    CUcontext ctx;
    CUdevice dev;
    bool primary;   /* retained primary context (else created) */
    bool used;
};
static struct cu_ctx ctxs[4];

static char last_error[512];

__attribute__((format(printf, 1, 2)))
static void set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

/* Records a failed call as "CALL: description (CUDA_ERROR_NAME)" and maps
 * the result to a probe status. */
static enum memest_probe_status fail(const char *call, CUresult r)
{
    const char *desc = NULL, *name = NULL;
    if (cu.GetErrorString && cu.GetErrorString(r, &desc) != CUDA_SUCCESS)
        desc = NULL;
    if (cu.GetErrorName && cu.GetErrorName(r, &name) != CUDA_SUCCESS)
        name = NULL;
    if (desc && name)
        set_error("%s: %s (%s)", call, desc, name);
    else if (desc || name)
        set_error("%s: %s (CUresult %d)", call, desc ? desc : name, r);
    else
        set_error("%s: CUDA error %d", call, r);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? MEMEST_PROBE_OOM : MEMEST_PROBE_FAILED;
}

/* The first of the names that the library exports, or NULL. */
static void *find_sym(const char *name, const char *fallback)
{
    void *p = dlsym(cu.lib, name);
    if (!p && fallback)
        p = dlsym(cu.lib, fallback);
    return p;
}

/* Stores a dlsym() result in a function pointer. ISO C has no conversion
 * between object and function pointers; POSIX guarantees that dlsym()'s
 * result can be used this way, and copying the representation keeps the
 * compiler quiet. */
#define LOAD(field, name, fallback)                                            \
    do {                                                                       \
        void *p_ = find_sym(name, fallback);                                   \
        static_assert(sizeof p_ == sizeof cu.field, "function pointer size");  \
        memcpy(&cu.field, &p_, sizeof p_);                                     \
    } while (0)

static void cuda_close(void)
{
    /* Release what the probe left (it should leave nothing). */
    for (size_t i = 0; i < sizeof ctxs / sizeof ctxs[0]; i++) {
        struct cu_ctx *c = &ctxs[i];
        if (!c->used || !cu.lib)
            continue;
        if (c->primary)
            cu.PrimaryCtxRelease(c->dev);
        else
            cu.CtxDestroy(c->ctx);
        c->used = false;
    }
    if (cu.lib)
        dlclose(cu.lib);
    memset(&cu, 0, sizeof cu);
}

static enum memest_probe_status cuda_open(const char *libpath)
{
    cuda_close();
    const char *from = "";
    if (!libpath) {
        const char *env = getenv("MEMEST_LIBCUDA");
        if (env && env[0]) {
            libpath = env;
            from = " (MEMEST_LIBCUDA)";
        }
    }
    errno = 0; /* ENOMEM after a failed dlopen(): malloc failed, whatever dlerror() says */
    if (libpath) {
        cu.lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
        if (!cu.lib && errno == ENOMEM) {
            set_error("cannot load the CUDA driver %s%s: out of memory", libpath, from);
            return MEMEST_PROBE_NOMEM;
        }
        if (!cu.lib) {
            const char *why = dlerror();
            set_error("cannot load the CUDA driver %s%s: %s", libpath, from,
                      why ? why : "dlopen failed");
            return MEMEST_PROBE_NODRIVER;
        }
    } else {
        libpath = "libcuda.so.1";
        cu.lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
        if (!cu.lib && errno != ENOMEM) {
            libpath = "libcuda.so";
            cu.lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
        }
        if (!cu.lib && errno == ENOMEM) {
            set_error("cannot load the CUDA driver %s: out of memory", libpath);
            return MEMEST_PROBE_NOMEM;
        }
        if (!cu.lib) {
            set_error("no CUDA driver found (libcuda.so.1)");
            return MEMEST_PROBE_NODRIVER;
        }
    }

    LOAD(GetErrorString, "cuGetErrorString", NULL);
    LOAD(GetErrorName, "cuGetErrorName", NULL);
    LOAD(Init, "cuInit", NULL);
    LOAD(DeviceGetCount, "cuDeviceGetCount", NULL);
    LOAD(DeviceGet, "cuDeviceGet", NULL);
    LOAD(DeviceGetName, "cuDeviceGetName", NULL);
    LOAD(DeviceTotalMem, "cuDeviceTotalMem_v2", NULL);
    LOAD(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
    LOAD(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
    LOAD(CtxSetCurrent, "cuCtxSetCurrent", NULL);
    LOAD(CtxCreate, "cuCtxCreate_v2", "cuCtxCreate");
    LOAD(CtxDestroy, "cuCtxDestroy_v2", "cuCtxDestroy");
    LOAD(MemGetInfo, "cuMemGetInfo_v2", NULL);
    LOAD(MemAlloc, "cuMemAlloc_v2", NULL);
    LOAD(MemFree, "cuMemFree_v2", NULL);
    LOAD(MemsetD8, "cuMemsetD8_v2", NULL);

    const char *missing = !cu.Init ? "cuInit"
        : !cu.DeviceGetCount ? "cuDeviceGetCount"
        : !cu.DeviceGet ? "cuDeviceGet"
        : !cu.DeviceGetName ? "cuDeviceGetName"
        : !cu.DeviceTotalMem ? "cuDeviceTotalMem_v2"
        : !cu.MemGetInfo ? "cuMemGetInfo_v2"
        : !cu.MemAlloc ? "cuMemAlloc_v2"
        : !cu.MemFree ? "cuMemFree_v2"
        : !cu.MemsetD8 ? "cuMemsetD8_v2"
        : !cu.CtxSetCurrent ? "cuCtxSetCurrent"
        : !cu.CtxDestroy ? "cuCtxDestroy_v2"
        : !(cu.PrimaryCtxRetain && cu.PrimaryCtxRelease) && !cu.CtxCreate ? "cuCtxCreate_v2"
        : NULL;
    if (missing) {
        set_error("the CUDA driver %s%s has no %s", libpath, from, missing);
        cuda_close();
        return MEMEST_PROBE_NODRIVER;
    }

    CUresult r = cu.Init(0);
    if (r != CUDA_SUCCESS) {
        fail("cuInit", r);
        char why[sizeof last_error];
        memcpy(why, last_error, sizeof why);
        set_error("%s using %s: %s", r == CUDA_ERROR_NO_DEVICE ? "no CUDA device found"
                                                                : "the CUDA driver failed to initialise",
                  libpath, why);
        cuda_close();
        return MEMEST_PROBE_NODEV;
    }
    return MEMEST_PROBE_OK;
}

static enum memest_probe_status cuda_device_count(int *count)
{
    CUresult r = cu.DeviceGetCount(count);
    return r == CUDA_SUCCESS ? MEMEST_PROBE_OK : fail("cuDeviceGetCount", r);
}

static enum memest_probe_status cuda_device_info(int device, char *name, size_t name_size,
                                                 uint64_t *total)
{
    CUdevice dev;
    size_t bytes = 0;
    CUresult r = cu.DeviceGet(&dev, device);
    if (r != CUDA_SUCCESS)
        return fail("cuDeviceGet", r);
    int len = name_size > 256 ? 256 : (int)name_size;
    if (len > 0) {
        name[0] = '\0';
        r = cu.DeviceGetName(name, len, dev);
        if (r != CUDA_SUCCESS)
            return fail("cuDeviceGetName", r);
        name[len - 1] = '\0';
    }
    r = cu.DeviceTotalMem(&bytes, dev);
    if (r != CUDA_SUCCESS)
        return fail("cuDeviceTotalMem_v2", r);
    *total = bytes;
    return MEMEST_PROBE_OK;
}

static enum memest_probe_status cuda_ctx_create(int device, bool scratch, void **out)
{
    struct cu_ctx *c = NULL;
    for (size_t i = 0; i < sizeof ctxs / sizeof ctxs[0] && !c; i++)
        if (!ctxs[i].used)
            c = &ctxs[i];
    if (!c) {
        set_error("too many CUDA contexts");
        return MEMEST_PROBE_FAILED;
    }
    CUresult r = cu.DeviceGet(&c->dev, device);
    if (r != CUDA_SUCCESS)
        return fail("cuDeviceGet", r);
    c->primary = !scratch && cu.PrimaryCtxRetain && cu.PrimaryCtxRelease;
    if (c->primary) {
        r = cu.PrimaryCtxRetain(&c->ctx, c->dev);
        if (r != CUDA_SUCCESS)
            return fail("cuDevicePrimaryCtxRetain", r);
        r = cu.CtxSetCurrent(c->ctx);
        if (r != CUDA_SUCCESS) {
            enum memest_probe_status st = fail("cuCtxSetCurrent", r);
            cu.PrimaryCtxRelease(c->dev);
            return st;
        }
    } else {
        if (!cu.CtxCreate) {
            set_error("the CUDA driver has no cuCtxCreate_v2");
            return MEMEST_PROBE_FAILED;
        }
        r = cu.CtxCreate(&c->ctx, 0, c->dev);   /* becomes current */
        if (r != CUDA_SUCCESS)
            return fail("cuCtxCreate_v2", r);
    }
    c->used = true;
    *out = c;
    return MEMEST_PROBE_OK;
}

static enum memest_probe_status cuda_ctx_use(void *ctx)
{
    struct cu_ctx *c = ctx;
    CUresult r = cu.CtxSetCurrent(c->ctx);
    return r == CUDA_SUCCESS ? MEMEST_PROBE_OK : fail("cuCtxSetCurrent", r);
}

static enum memest_probe_status cuda_ctx_destroy(void *ctx)
{
    struct cu_ctx *c = ctx;
    CUresult r;
    c->used = false;
    if (c->primary) {
        /* Unbind it first: releasing does not pop it from the thread. */
        cu.CtxSetCurrent(NULL);
        r = cu.PrimaryCtxRelease(c->dev);
        return r == CUDA_SUCCESS ? MEMEST_PROBE_OK : fail("cuDevicePrimaryCtxRelease", r);
    }
    r = cu.CtxDestroy(c->ctx);   /* also pops it if current */
    return r == CUDA_SUCCESS ? MEMEST_PROBE_OK : fail("cuCtxDestroy_v2", r);
}

static enum memest_probe_status cuda_mem_info(uint64_t *free_bytes, uint64_t *total_bytes)
{
    size_t f = 0, t = 0;
    CUresult r = cu.MemGetInfo(&f, &t);
    if (r != CUDA_SUCCESS)
        return fail("cuMemGetInfo_v2", r);
    *free_bytes = f;
    *total_bytes = t;
    return MEMEST_PROBE_OK;
}

/* Sizes above SIZE_MAX cannot be asked for (only on 32-bit hosts). */
static bool fits_size_t(uint64_t bytes)
{
    return bytes <= (uint64_t)SIZE_MAX;
}

static enum memest_probe_status cuda_mem_alloc(uint64_t bytes, uint64_t *handle)
{
    char call[64];
    snprintf(call, sizeof call, "cuMemAlloc_v2(%llu bytes)", (unsigned long long)bytes);
    if (!fits_size_t(bytes))
        return fail(call, CUDA_ERROR_OUT_OF_MEMORY);
    CUdeviceptr p = 0;
    CUresult r = cu.MemAlloc(&p, (size_t)bytes);
    if (r != CUDA_SUCCESS)
        return fail(call, r);
    *handle = p;
    return MEMEST_PROBE_OK;
}

static enum memest_probe_status cuda_mem_touch(uint64_t handle, uint64_t offset, uint64_t bytes)
{
    CUresult r = cu.MemsetD8((CUdeviceptr)(handle + offset), 0, (size_t)bytes);
    if (r == CUDA_SUCCESS)
        return MEMEST_PROBE_OK;
    char call[64];
    snprintf(call, sizeof call, "cuMemsetD8_v2(%llu bytes)", (unsigned long long)bytes);
    return fail(call, r);
}

static enum memest_probe_status cuda_mem_free(uint64_t handle)
{
    CUresult r = cu.MemFree((CUdeviceptr)handle);
    return r == CUDA_SUCCESS ? MEMEST_PROBE_OK : fail("cuMemFree_v2", r);
}

static const char *cuda_last_error(void)
{
    return last_error[0] ? last_error : "unknown CUDA driver error";
}

const struct memest_probe_backend memest_probe_cuda = {
    .name = "cuda",
    .open = cuda_open,
    .device_count = cuda_device_count,
    .device_info = cuda_device_info,
    .ctx_create = cuda_ctx_create,
    .ctx_use = cuda_ctx_use,
    .ctx_destroy = cuda_ctx_destroy,
    .mem_info = cuda_mem_info,
    .mem_alloc = cuda_mem_alloc,
    .mem_touch = cuda_mem_touch,
    .mem_free = cuda_mem_free,
    .close = cuda_close,
    .last_error = cuda_last_error,
};
