"""What the per-family reference generators (tests/tools/hf_figures_<group>.py) share beyond hf_figures.py:
the "configs" figures of shipped example configs against published counts and their hand arithmetic, and the
writing of the reference file with its provenance stamp and a summary on stderr."""
import json
import sys

import torch

from hf_figures import here, load, static_info
from provenance import stamp


def config_figures(names, builders, published, arithmetic):
    """Each models/hf/NAME.json built on the meta device: static_info, the published figure, asserted equal to
    the model's count and to the arithmetic written out by hand."""
    out = {}
    for name in names:
        cfg = load(here("models", "hf", name + ".json"))
        with torch.device("meta"):
            model = builders[cfg["model_type"]](cfg)
        info = static_info(model)
        info["model_type"] = cfg["model_type"]
        info["published_params"] = published[name]
        assert arithmetic[name] == published[name], (name, arithmetic[name])
        assert info["params_total"] == published[name], (name, info["params_total"], published[name])
        out[name] = info
    return out


def write_reference(argv, generator, follows, configs, tiny):
    """The reference JSON (to argv[1], else stdout), stamped, and one line per figure on stderr."""
    result = {
        "generator": generator,
        "follows": "transformers: " + follows,
        "torch_version": torch.__version__,
        "device": "cpu",
        "configs": configs,
        "tiny": tiny,
    }
    result = stamp(result, generator,
                   {"torch": torch.__version__, "transformers": follows + " (followed in plain PyTorch, not imported)"})
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    if len(argv) > 1:
        with open(argv[1], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    for name, e in result["configs"].items():
        sys.stderr.write("%-18s %14d params  published %s  buffers %d\n" % (
            name, e["params_total"], e.get("published_params"), e["buffers_count"]))
    for name, e in result["tiny"].items():
        for k, r in e["runs"].items():
            sys.stderr.write("%-18s %-16s %10d saved (cuda %d)\n" % (name, k, r["saved_activation_bytes"],
                                                                     r["saved_activation_bytes_cuda_corrected"]))
