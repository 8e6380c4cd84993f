# Hostile Hugging Face configs (issue 30, class 4): zero, negative and null
# sizes, values out of their domain, two keys of one variable, and
# quantization_config values of the wrong type or contradicting each other.
# A default applies only where transformers applies it. Sourced by run.sh.

# cfg SRC KEY=JSON ...: SRC with the keys set (JSON values; KEY=- deletes
# it; a.b=1 sets a nested key), into c.json
cfg() {
    python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for kv in sys.argv[2:]:
    k, v = kv.split("=", 1)
    *outer, last = k.split(".")
    o = d
    for p in outer:
        o = o.setdefault(p, {})
    if v == "-":
        o.pop(last, None)
    else:
        o[last] = json.loads(v)
json.dump(d, open("c.json", "w"), indent=1)
PY
}

# refused SRC FRAGMENT KEY=JSON ...: the edited config is refused (exit 3)
refused() {
    local src=$1 frag=$2
    shift 2
    cfg "$src" "$@"
    expect 3 "$frag"
    run "$MEMEST" c.json --seq 16
}

# agrees SRC "EDITS" "BASE EDITS": the config with EDITS gives the estimate
# the config with BASE EDITS gives
agrees() {
    local src=$1
    cfg "$src" $3
    mv c.json base.json
    cfg "$src" $2
    expect 0
    run "$MEMEST" base.json --seq 16
    save base.out
    run "$MEMEST" c.json --seq 16
    sed -i 's/c\.json/base.json/' .out
    same_output .out base.out
}

LL=$HF/tiny/llama.json
Q=$HF/llama-2-7b-qlora.json

case_hidden_size_null() {
    refused "$LL" 'hidden_size: null is not a value of it for model_type "llama"' 'hidden_size=null'
}
case_hidden_size_zero() {
    refused "$LL" 'hidden_size: expected a whole number of at least 1 for model_type "llama", got 0' 'hidden_size=0'
}
case_layers_fraction() {
    refused "$LL" 'num_hidden_layers: expected a whole number of at least 1' 'num_hidden_layers=2.5'
}
case_kv_heads_zero() {
    refused "$LL" 'num_key_value_heads: expected a whole number of at least 1 for model_type "llama", got 0' 'num_key_value_heads=0'
}
case_kv_heads_negative() {
    refused "$LL" 'got -2' 'num_key_value_heads=-2'
}
case_kv_heads_null() {
    # LlamaConfig: num_key_value_heads None is num_attention_heads
    agrees "$LL" 'num_key_value_heads=null' 'num_key_value_heads=4'
}
case_head_dim_negative() {
    refused "$LL" 'head_dim: expected a whole number of at least 1 for model_type "llama", got -16' 'head_dim=-16'
}
case_head_dim_zero() {
    # head_dim 0 or null: hidden_size // num_attention_heads
    agrees "$LL" 'head_dim=0' 'head_dim=16'
}
case_head_dim_null() {
    agrees "$LL" 'head_dim=null' 'head_dim=-'
}
case_vocab_string() {
    refused "$LL" 'vocab_size: expected a number for model_type "llama"' 'vocab_size="128"'
}
case_dropout_past_one() {
    refused "$LL" 'attention_dropout: expected a probability between 0 and 1 for model_type "llama", got 1.5' 'attention_dropout=1.5'
}
case_eps_negative() {
    refused "$LL" 'rms_norm_eps: expected a number of at least 0' 'rms_norm_eps=-1e-05'
}
case_positions_zero() {
    refused "$LL" 'max_position_embeddings: expected a whole number of at least 1' 'max_position_embeddings=0'
}
case_tie_string() {
    refused "$LL" 'tie_word_embeddings: expected a boolean' 'tie_word_embeddings="false"'
}
case_gpt2_inner_negative() {
    refused "$MODELS/hf/gpt2.json" 'n_inner: expected a whole number of at least 1 for model_type "gpt2", got -1' 'n_inner=-1'
}
case_gpt2_inner_null() {
    # GPT2MLP: n_inner None is 4 * n_embd
    agrees "$MODELS/hf/gpt2.json" 'n_inner=null' 'n_inner=3072'
}
case_gpt2_alias_conflict() {
    refused "$MODELS/hf/gpt2.json" 'hidden_size: sets the template'"'"'s variable "n_embd" to 1024, which n_embd set to 768' 'hidden_size=1024'
}
case_gpt2_alias_agreeing() {
    agrees "$MODELS/hf/gpt2.json" 'hidden_size=768' 'hidden_size=-'
}
case_t5_decoder_layers_zero() {
    refused "$MODELS/hf/t5-small.json" 'num_decoder_layers: expected a whole number of at least 1 for model_type "t5", got 0' 'num_decoder_layers=0'
}
case_t5_decoder_layers_null() {
    # T5Config: num_decoder_layers None is num_layers
    agrees "$MODELS/hf/t5-small.json" 'num_decoder_layers=null' 'num_decoder_layers=6'
}
case_t5_decoder_layers_negative() {
    refused "$MODELS/hf/t5-small.json" 'got -6' 'num_decoder_layers=-6'
}
case_opt_proj_null() {
    # OPTConfig: word_embed_proj_dim None is hidden_size
    agrees "$MODELS/hf/opt-125m.json" 'word_embed_proj_dim=null' 'word_embed_proj_dim=768'
}
case_mixtral_window_null() {
    agrees "$HF/tiny/mixtral.json" 'sliding_window=null' 'sliding_window=-'
}
case_mixtral_window_negative() {
    refused "$HF/tiny/mixtral.json" 'sliding_window: expected a whole number of at least 1' 'sliding_window=-1'
}
case_huge_layers() {
    refused "$LL" 'num_hidden_layers' 'num_hidden_layers=1e300'
}

# quantization_config
case_quant_4bit_string() {
    refused "$Q" 'quantization_config: load_in_4bit: expected true or false, got a string' 'quantization_config.load_in_4bit="true"'
}
case_quant_8bit_number() {
    refused "$Q" 'load_in_8bit: expected true or false, got a number' 'quantization_config.load_in_8bit=1'
}
case_quant_both() {
    refused "$Q" 'load_in_4bit and load_in_8bit are both true' 'quantization_config.load_in_8bit=true'
}
case_quant_double_quant_string() {
    refused "$Q" 'bnb_4bit_use_double_quant: expected true or false' 'quantization_config.bnb_4bit_use_double_quant="yes"'
}
case_quant_fp16_weight() {
    refused "$Q" 'llm_int8_has_fp16_weight: true keeps float16 weights' 'quantization_config.load_in_4bit=false' 'quantization_config.load_in_8bit=true' 'quantization_config.llm_int8_has_fp16_weight=true'
}
case_quant_4bit_false() {
    # neither 4 nor 8 bits: the weights are not quantised
    agrees "$Q" 'quantization_config.load_in_4bit=false' 'quantization_config=-'
}
case_gptq_desc_act_string() {
    refused "$LL" 'desc_act: expected true or false, got a string' 'quantization_config={"quant_method":"gptq","bits":4,"group_size":16,"desc_act":"false"}' 'hidden_size=128' 'intermediate_size=256'
}
case_gptq_unpackable() {
    # 48 input features do not fill the int32 rows of qweight [in // 32 * 4, out]
    cfg "$LL" 'quantization_config={"quant_method":"gptq","bits":4,"group_size":16}' 'hidden_size=48' 'num_attention_heads=3' 'num_key_value_heads=3'
    expect 3 'in_features (48) and out_features (48) must be multiples of 32'
    run "$MEMEST" c.json --seq 16
}
case_gptq_bits() {
    refused "$LL" 'bits: memest models 4-bit' 'quantization_config={"quant_method":"gptq","bits":3}'
}
case_quant_not_object() {
    refused "$LL" 'quantization_config: expected an object' 'quantization_config=[1]'
}

case_dtype_and_torch_dtype() {
    # transformers v4.56 reads either name: two values would depend on the order
    refused "$LL" 'torch_dtype: differs from dtype, which names the same setting' 'torch_dtype="bfloat16"' 'dtype="float16"'
}
case_dtype_and_torch_dtype_alike() {
    agrees "$LL" 'torch_dtype="bfloat16" dtype="bfloat16"' 'torch_dtype="bfloat16"'
}
