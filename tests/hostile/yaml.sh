# Hostile YAML for --fsdp-config (class 2 of issue 30): aliases expanded
# without bound, deep nesting, several documents, numbers read by atoi, a
# layout hybrid sharding cannot mean. Sourced by run.sh.

# 9 levels of 9 aliases: 9^9 = 387 million scalars from a 580-byte file
laughs() {
    echo 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
    local p=a
    for c in b c d e f g h i; do
        echo "$c: &$c [*$p,*$p,*$p,*$p,*$p,*$p,*$p,*$p,*$p]"
        p=$c
    done
}

case_billion_laughs() {
    { echo 'distributed_type: FSDP'; echo 'debug:'; laughs | sed 's/^/  /'; } > laughs.yaml
    expect 3 "laughs.yaml:"
    run "$MEMEST" "$GOOD" --gpus 2 --fsdp-config laughs.yaml
}
