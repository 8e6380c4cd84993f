/* run_opts.c - the names of the run options of the LLM ops (run.h):
 * the attention kernels of --attention, the recurrent kernels of
 * --rnn-kernel, the fused kernels of --fused and the
 * PyTorch versions of --torch. The command line and its --help read them
 * from here. */
#include <string.h>

#include "memest/run.h"

static const char *const attention_names[MEMEST_ATTN_COUNT] = {
    [MEMEST_ATTN_AUTO] = "auto",   [MEMEST_ATTN_EAGER] = "eager",
    [MEMEST_ATTN_MATH] = "math",   [MEMEST_ATTN_FLASH] = "flash",
    [MEMEST_ATTN_EFFICIENT] = "efficient", [MEMEST_ATTN_CUDNN] = "cudnn",
};

static const char *const fused_names[MEMEST_FUSED_COUNT] = {
    "rmsnorm", "rotary", "swiglu", "linear-ce",
};

/* The index of s in names[0..n-1] into *out: 0, or -1 when absent. */
static int name_index(const char *const *names, int n, const char *s, uint8_t *out)
{
    for (int k = 0; k < n; k++)
        if (strcmp(s, names[k]) == 0) {
            *out = (uint8_t)k;
            return 0;
        }
    return -1;
}

static const char *const rnn_kernel_names[MEMEST_RNN_KERNEL_COUNT] = {
    [MEMEST_RNN_CUDNN] = "cudnn", [MEMEST_RNN_NATIVE] = "native",
};

const char *memest_rnn_kernel_name(int k)
{
    return k >= 0 && k < MEMEST_RNN_KERNEL_COUNT ? rnn_kernel_names[k] : "?";
}

int memest_rnn_kernel_parse(const char *s, uint8_t *out)
{
    return name_index(rnn_kernel_names, MEMEST_RNN_KERNEL_COUNT, s, out);
}

const char *memest_attention_name(int a)
{
    return a >= 0 && a < MEMEST_ATTN_COUNT ? attention_names[a] : "?";
}

int memest_attention_parse(const char *s, uint8_t *out)
{
    return name_index(attention_names, MEMEST_ATTN_COUNT, s, out);
}

const char *memest_fused_name(int bit_index)
{
    return bit_index >= 0 && bit_index < MEMEST_FUSED_COUNT ? fused_names[bit_index] : "?";
}

int memest_fused_parse(const char *list, uint32_t *out)
{
    if (strcmp(list, "none") == 0) {
        *out = 0;
        return 0;
    }
    if (strcmp(list, "all") == 0) {
        *out = (1u << MEMEST_FUSED_COUNT) - 1;
        return 0;
    }
    uint32_t bits = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        int k = 0;
        while (k < MEMEST_FUSED_COUNT &&
               !(strlen(fused_names[k]) == len && memcmp(p, fused_names[k], len) == 0))
            k++;
        if (k == MEMEST_FUSED_COUNT)
            return -1;
        bits |= 1u << k;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    *out = bits;
    return 0;
}

int memest_torch_parse(const char *s, uint16_t *out)
{
    if (strcmp(s, "2") == 0 || strcmp(s, "2.x") == 0) {
        *out = 0;
        return 0;
    }
    if (strcmp(s, "1.13") == 0) {
        *out = 113;
        return 0;
    }
    return -1;
}
