# Hostile YAML for --fsdp-config (issue 30, class 2): aliases expanded
# without bound, deep nesting, several documents, numbers and names read
# loosely, a layout accelerate cannot start, and what yaml.safe_load
# refuses. Sourced by run.sh (README.md here).

L7B=$MODELS/hf/llama-2-7b.json

# an accelerate config: the FSDP one of tests/dist, with $1 appended
acc() {
    cat "$SRC/tests/dist/accelerate_fsdp.yaml"
    [ -z "${1-}" ] || printf '%s\n' "$1"
}

# 9 levels of 9 aliases: 9^9 = 387 million scalars from 580 bytes
laughs() {
    echo "${1-}a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]"
    local p=a
    for c in b c d e f g h i; do
        echo "${1-}$c: &$c [*$p,*$p,*$p,*$p,*$p,*$p,*$p,*$p,*$p]"
        p=$c
    done
}

fsdp() { run "$MEMEST" "$L7B" --gpus 8 --seq 256 --fsdp-config "$@"; }

# refused SED FRAGMENT: the config edited by SED is refused (exit 3)
refused() {
    acc | sed "$1" > edited.yaml
    expect 3 "$2"
    fsdp edited.yaml
}

# agrees SED [BASE_SED]: the config edited by SED gives the estimate the
# config edited by BASE_SED (default: none) gives
agrees() {
    acc | sed "${2:-}" > base.yaml
    acc | sed "$1" > edited.yaml
    expect 0
    fsdp base.yaml
    save base.out
    fsdp edited.yaml
    same_output .out base.out
}

case_billion_laughs() {
    { echo 'distributed_type: FSDP'; laughs; } > laughs.yaml
    expect 3 "more than 100000 YAML nodes"
    fsdp laughs.yaml
    grep -q 'laughs.yaml:[0-9]*:[0-9]*: ' .err || fail "no line:column"
}

case_laughs_under_ignored_key() {
    # an ignored key (debug) may not hide the expansion
    { echo 'distributed_type: FSDP'; echo 'debug:'; laughs '  '; } > laughs.yaml
    expect 3 "more than 100000 YAML nodes"
    fsdp laughs.yaml
}

case_wide_mapping_duplicate_last() {
    # 49,000 keys in one mapping, the last a duplicate: refused within the
    # bounds (a linear scan per key made this 1.2e9 comparisons, 9 s)
    { echo 'distributed_type: FSDP'; echo 'debug:'
      seq 0 48999 | sed 's/^/  k/; s/$/: 1/'; echo '  k0: 2'; } > wide.yaml
    expect 3 'duplicate key "k0" in the same mapping'
    fsdp wide.yaml
    grep -q 'wide.yaml:49003:3: ' .err || fail "no line:column of the duplicate"
}

case_laughs_in_flow() {
    { echo 'x: &a [1,1,1,1,1,1,1,1,1,1]'
      echo 'y: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]'
      echo 'z: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]'
      echo 'w: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]'
      echo 'v: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]'; } > flow.yaml
    expect 3 "flow.yaml:5:"
    fsdp flow.yaml
}

case_aliases_within_budget() {
    # aliases are read (a small expansion is a config like any other)
    { acc; echo 'tpu_env: &e []'; } | sed 's/^tpu_env: \[\]$//' > a.yaml
    printf 'dynamo_config: &d {}\ngpu_ids: *d\n' >> a.yaml
    expect 0 "Several GPUs"
    fsdp a.yaml
}

case_deep_flow_nesting() {
    # 100 KB of '[': libyaml's scanner is quadratic in it; refused at level 33
    head -c 100000 /dev/zero | tr '\0' '[' > deep.yaml
    expect 3 "nested deeper than 32"
    fsdp deep.yaml
    grep -q 'deep.yaml:1:33: ' .err || fail "not at line 1, column 33"
}

case_deep_block_nesting() {
    for i in $(seq 0 40); do printf "%*sk$i:\n" $((i * 2)) ''; done > deep.yaml
    expect 3 "nested deeper than 32"
    fsdp deep.yaml
}

case_deep_flow_mappings() {
    { printf 'fsdp_config: '; for i in $(seq 1 20000); do printf '{a: '; done; } > deep.yaml
    expect 3 "nested deeper than 32"
    fsdp deep.yaml
}

case_two_documents() {
    { acc; echo '---'; echo 'num_processes: 2'; } > two.yaml
    expect 3 "a second YAML document"
    fsdp two.yaml
}

case_two_documents_explicit_end() {
    { echo '---'; acc; echo '...'; echo '--- {}'; } > two.yaml
    expect 3 "two.yaml:29:1: a second YAML document"
    fsdp two.yaml
}

case_one_document_markers() {
    # one document between --- and ... is a config like any other
    agrees '1i ---
$a ...'
}

case_processes_atoi() {
    refused 's/^num_processes: 8$/num_processes: 3abc/' \
        'num_processes: expected a whole number between 1 and 1048576, got "3abc"'
}

case_processes_fraction() {
    refused 's/^num_processes: 8$/num_processes: 8.5/' \
        'num_processes: expected a whole number between 1 and 1048576, got 8.5'
}

case_processes_zero() {
    refused 's/^num_processes: 8$/num_processes: 0/' \
        'got 0'
}

case_processes_exponent() {
    # YAML 1.1 reads 8e0 as a string (a float needs a '.'): not a count
    refused 's/^num_processes: 8$/num_processes: 8e0/' \
        'got "8e0"'
}

case_processes_quoted_digits() {
    # accelerate passes the value on as text: "8" is 8
    agrees "s/^num_processes: 8\$/num_processes: '8'/"
}

case_processes_hex() {
    # 0x8 is YAML 1.1's eight
    agrees 's/^num_processes: 8$/num_processes: 0x8/'
}

case_machines_not_dividing() {
    acc | sed 's/^num_processes: 8$/num_processes: 6/; s/^num_machines: 1$/num_machines: 4/;
               s/FULL_SHARD/HYBRID_SHARD/' > h.yaml
    expect 3 'num_machines: 6 processes (num_processes) do not split over 4 machines'
    run "$MEMEST" "$L7B" --seq 256 --fsdp-config h.yaml
}

case_machines_not_dividing_gpus() {
    refused 's/^num_machines: 1$/num_machines: 3/' \
        '8 processes (--gpus) do not split over 3 machines'
}

case_strategy_atoi() {
    refused 's/FULL_SHARD/1abc/' \
        'fsdp_sharding_strategy: expected one of FULL_SHARD'
}

case_strategy_number() {
    # 1 is FULL_SHARD (FSDP's ShardingStrategy, by number)
    agrees 's/FULL_SHARD/1/'
}

case_strategy_out_of_range() {
    refused 's/FULL_SHARD/9/' \
        'got 9'
}

case_boolean_word() {
    # str_to_bool's words: "yes" is true
    agrees 's/fsdp_offload_params: false/fsdp_offload_params: "yes"/' \
           's/fsdp_offload_params: false/fsdp_offload_params: true/'
}

case_boolean_garbage() {
    refused 's/fsdp_offload_params: false/fsdp_offload_params: maybe/' \
        'fsdp_offload_params: expected true or false, got "maybe"'
}

case_python_tag() {
    refused 's/^main_training_function: main$/main_training_function: !!python\/object\/apply:os.system ["true"]/' \
        'the tag "tag:yaml.org,2002:python/object/apply:os.system" is not read'
}

case_local_tag() {
    refused 's/^debug: false$/debug: !mine false/' \
        'the tag "!mine" is not read'
}

case_merge_key() {
    printf 'base: &b {fsdp_offload_params: true}\nfsdp_config:\n  <<: *b\n' > m.yaml
    expect 3 "a merge key (<<) is not read"
    fsdp m.yaml
}

case_duplicate_key() {
    { acc; echo 'num_processes: 2'; } > d.yaml
    expect 3 'duplicate key "num_processes"'
    fsdp d.yaml
}

case_setting_twice() {
    # the Trainer's fsdp_config takes keys with and without fsdp_
    printf '{"fsdp_offload_params": true, "offload_params": false}\n' > t.json
    expect 3 'offload_params: the setting offload_params is given twice (also as fsdp_offload_params)'
    fsdp t.json
}

case_undefined_alias() {
    { acc; echo 'gpu_ids: *nowhere'; } > u.yaml
    expect 3 "the alias *nowhere names no anchor"
    fsdp u.yaml
}

case_recursive_alias() {
    { acc; echo 'dynamo_config: &r {a: *r}'; } > r.yaml
    expect 3 "recursive"
    fsdp r.yaml
}

case_infinite_number() {
    refused 's/^num_processes: 8$/num_processes: .inf/' \
        '".inf" is not a finite number'
}

case_collection_key() {
    { acc; echo '? [a, b]'; echo ': c'; } > k.yaml
    expect 3 "a mapping key must be a scalar"
    fsdp k.yaml
}

case_empty_file() {
    : > e.yaml
    expect 3 "expected a mapping"
    fsdp e.yaml
}

case_top_level_list() {
    printf -- '- distributed_type: FSDP\n' > l.yaml
    expect 3 "expected a mapping"
    fsdp l.yaml
}

case_binary() {
    head -c 3000 /dev/urandom > b.yaml
    printf 'x: \x00\n' >> b.yaml
    expect 3 "b.yaml:"
    fsdp b.yaml
}

case_over_one_mib() {
    { acc; head -c 1100000 /dev/zero | tr '\0' '#'; echo; } > big.yaml
    expect 3 "config files are limited to 1 MiB"
    fsdp big.yaml
}

case_unquoted_no() {
    # mixed_precision: no is YAML 1.1's false: no mixed precision
    agrees "s/^mixed_precision: bf16\$/mixed_precision: no/" \
           "s/^mixed_precision: bf16\$/mixed_precision: 'no'/"
}

case_control_bytes_in_key() {
    # an escape sequence in a key: the message shows it escaped
    acc | grep -v '^fsdp_config:\|^  fsdp' > c.yaml
    printf 'fsdp_config:\n  "fsdp_\\e[31mred": 1\n' >> c.yaml
    expect 3 "unknown FSDP config key"
    fsdp c.yaml
}

case_flow_style_document() {
    # a YAML document in flow style opens with '{' but is not JSON
    acc > block.yaml
    printf '{distributed_type: FSDP, num_processes: 8, mixed_precision: bf16, num_machines: 1,\n fsdp_config: {fsdp_sharding_strategy: FULL_SHARD, fsdp_offload_params: false,\n  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer, fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP,\n  fsdp_backward_prefetch: BACKWARD_PRE, fsdp_forward_prefetch: false}}\n' > flow.yaml
    expect 0
    fsdp block.yaml
    save block.out
    notes_ok
    fsdp flow.yaml
    same_output .out block.out
}

case_broken_json() {
    # a JSON file cut short: the JSON reading's message
    printf '{"distributed_type": "FSDP",\n' > cut.json
    expect 3 'cut.json:2:1: unexpected end of file: the JSON is truncated'
    fsdp cut.json
}
