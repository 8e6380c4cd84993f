"""What the per-family reference generators (tests/tools/hf_figures_<group>.py) share beyond hf_figures.py:
the "configs" figures of shipped example configs against published counts and their hand arithmetic, and the
writing of the reference file with its provenance stamp and a summary on stderr."""
import torch

from hf_figures import here, load, static_info, write_figures


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
    """The reference JSON (to argv[1], else stdout), stamped, and one line per figure on stderr
    (hf_figures.write_figures)."""
    write_figures(argv, generator, follows, configs, tiny)
