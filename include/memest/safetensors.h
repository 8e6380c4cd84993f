/* safetensors.h - a model folder's safetensors checkpoint, read from the
 * headers of its files only, never the tensors' data, and checked against
 * the model its config.json describes (src/model/safetensors.c reads,
 * src/model/safetensors_check.c checks).
 *
 * A folder `memest DIR` reads (model.h) is a checkpoint when it holds, as
 * transformers' from_pretrained looks for them (v4.48.0 modeling_utils.py):
 * model.safetensors; else model.safetensors.index.json, whose weight_map
 * names the shard of every tensor; else shards model-NNNNN-of-MMMMM.safetensors,
 * all M of them. A safetensors file is an 8-byte little-endian header
 * length N, N bytes of JSON (tensor name: {dtype, shape, data_offsets},
 * and "__metadata__": {string: string}), then the data, which is never
 * read: memest reads the 8 bytes and the header with fread and takes the
 * file's size from fstat. Every header is held to what the safetensors
 * library checks when it loads the file (its length at most 100,000,000
 * bytes and within the file, its JSON, each tensor's data_offsets holding
 * exactly its dtype times its shape, the tensors' data back to back and
 * filling the file), each failure an error naming the file and the tensor
 * (exit code 3). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/arena.h"
#include "memest/dtype.h"
#include "memest/error.h"
#include "memest/shape.h"

struct memest_model;

#define MEMEST_CKPT_MAX_HEADER 100000000u   /* safetensors' MAX_HEADER_SIZE */
#define MEMEST_CKPT_MAX_TENSORS 1000000u    /* tensors of a checkpoint, all files */
#define MEMEST_CKPT_MAX_FILES 10000u        /* files of a sharded checkpoint */

/* The element types of safetensors (its Dtype), as headers name them. */
enum memest_ckpt_dtype {
    MEMEST_CK_BOOL = 0, MEMEST_CK_U8, MEMEST_CK_I8, MEMEST_CK_F8_E5M2, MEMEST_CK_F8_E4M3,
    MEMEST_CK_F8_E8M0, MEMEST_CK_I16, MEMEST_CK_U16, MEMEST_CK_F16, MEMEST_CK_BF16,
    MEMEST_CK_I32, MEMEST_CK_U32, MEMEST_CK_F32, MEMEST_CK_F64, MEMEST_CK_I64, MEMEST_CK_U64,
    MEMEST_CK_C64, MEMEST_CK_F4, MEMEST_CK_F6_E2M3, MEMEST_CK_F6_E3M2,
    MEMEST_CK_COUNT
};

/* "BF16", as the headers write it; bits per element (4 for F4). */
const char *memest_ckpt_dtype_name(enum memest_ckpt_dtype d);
unsigned memest_ckpt_dtype_bits(enum memest_ckpt_dtype d);

/* One tensor of a header. */
struct memest_ckpt_tensor {
    const char *name;
    uint32_t file;               /* into memest_ckpt.files */
    uint8_t dtype;               /* enum memest_ckpt_dtype */
    int ndim;
    int64_t shape[MEMEST_MAX_DIMS];
    uint64_t bytes;              /* data_offsets[1] - data_offsets[0] */
};

/* What the check against the model found (memest_ckpt_check). */
struct memest_ckpt_match {
    bool checked;
    uint8_t format;              /* enum memest_wformat of the quantised layers; DENSE: none */
    uint64_t matched;            /* tensors that are a parameter or buffer of the model */
    uint64_t ignored;            /* tensors the model does not load (an old rotary inv_freq) */
    uint64_t stacked;            /* of the matched: tensors stacking the experts' tensors of
                                    the model over a first dimension (fused experts) */
    char prefix[64];             /* the base model's prefix ("model.") added to the
                                    checkpoint's names (a base model's checkpoint); "": none */
    uint64_t quant_bytes;        /* the quantised layers' tensors: their bytes in the headers */
    uint64_t quant_model_bytes;  /* ... and as memest lays them out (quant.h) */
};

struct memest_ckpt {
    const char *dir;             /* the folder */
    const char *index;           /* its model.safetensors.index.json, or NULL */
    const char **files;          /* the safetensors files read, as paths */
    uint32_t nfiles;
    struct memest_ckpt_tensor *t;
    uint64_t ntensors;
    uint64_t bytes;              /* the tensors' data (the files less their headers) */
    uint64_t dtype_bytes[MEMEST_CK_COUNT];
    /* The floating type of the most elements of the weights and biases
     * (F32, F16 or BF16), as config.json's torch_dtype names it: the
     * parameters' dtype when the config names none. */
    bool has_dtype;
    enum memest_dtype dtype;
    char note[320];              /* a note for the command to print ("": none) */
    struct memest_ckpt_match match;
};

/* Reads the headers of the checkpoint in folder `dir` into *out (allocated
 * in `a`); *out NULL when the folder holds none. 0 / -1 (err names the file,
 * and the tensor in its path). */
int memest_ckpt_read(const char *dir, struct memest_arena *a, struct memest_ckpt **out,
                     struct memest_error *err);

/* Checks the checkpoint against the model m describes (a config read
 * through its architecture template) built with the overrides ov (the
 * command's --set and --seq: a --set that changes a parameter's shape
 * meets a checkpoint that disagrees) and with its quantization_config
 * (not the command's --weights, nor --tp: the checkpoint holds the whole
 * model as the config gives it): every parameter of the model in the checkpoint
 * with its shape (a tied one may be absent, a buffer may be present or
 * not), every tensor of the checkpoint a parameter or buffer of the model
 * (or a tensor transformers does not load: an old checkpoint's rotary
 * inv_freq), a quantised layer stored in the layout memest gives its format
 * (quant.h), its tensors' bytes as memest counts them; a tensor stacking
 * the experts the template writes one by one (fused experts: [E, ...])
 * matches each of them. FP8 and MXFP4 weights without a quantization_config
 * of their method, and the other sub-byte float types, are refused.
 * Fills c->match. 0 / -1 (err names the file and the tensor). */
struct memest_override;
int memest_ckpt_check(struct memest_ckpt *c, const struct memest_model *m,
                      const struct memest_override *ov, int nov, struct memest_error *err);
