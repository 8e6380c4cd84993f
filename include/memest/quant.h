/* quant.h - quantised weight storage: how a linear layer's weight is kept
 * when the model is loaded with bitsandbytes (load_in_8bit / load_in_4bit),
 * GPTQ or AWQ. A graph pass (src/model) gives the formats to nodes
 * (graph.h: memest_node.wformat); shape inference (src/ops) sizes the
 * stored tensors and the dequantised copies from them. */
#pragma once

/* memest_node.wformat: the storage of a linear layer's weight. */
enum memest_wformat {
    MEMEST_WF_DENSE = 0,  /* a plain tensor of the parameter dtype */
    MEMEST_WF_INT8,       /* bitsandbytes Linear8bitLt (LLM.int8()) */
    MEMEST_WF_NF4,        /* bitsandbytes Linear4bit, quant_type "nf4" */
    MEMEST_WF_FP4,        /* bitsandbytes Linear4bit, quant_type "fp4" */
    MEMEST_WF_GPTQ4,      /* GPTQ QuantLinear, 4 bits */
    MEMEST_WF_AWQ4,       /* AWQ WQLinear, 4 bits */
    MEMEST_WF_COUNT
};
