#!/usr/bin/env python3
"""test_export.py CASE MEMEST: the tests of memest-export (src/export/).

Each case exports a model with the library or the command and checks what
memest reads in the file against figures computed here from the module
itself (parameters from model.parameters(), MACs from the conv and linear
layers' shapes, output shapes from running it), never against memest's own
output. Exit 77 (ctest SKIP) when PyTorch cannot be imported; the case
`batchexpr` needs no PyTorch."""

import inspect
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "src", "export"))
LAUNCHER = os.path.join(ROOT, "src", "export", "memest-export")
SKIP = 77
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def memest_json(memest, path, batch, *extra):
    p = subprocess.run([memest, path, "--batch", str(batch), "--json"] + list(extra),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    doc = json.loads(p.stdout.decode())
    if "error" in doc:
        raise AssertionError("memest refuses %s: %s" % (path, doc["error"]["message"]))
    return doc


def import_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def forward_macs(model, x):
    """Multiply-accumulates of the conv and linear layers, from their shapes:
    a conv output element takes in_channels/groups * kernel products, a linear
    one in_features (matmul-like ops are the only MACs memest counts)."""
    import torch
    total = [0]

    def hook(m, inp, out):
        if isinstance(m, torch.nn.modules.conv._ConvNd):
            k = 1
            for s in m.kernel_size:
                k *= s
            total[0] += out.numel() * (m.in_channels // m.groups) * k
        elif isinstance(m, torch.nn.Linear):
            total[0] += out.numel() * m.in_features
    hs = [m.register_forward_hook(hook) for m in model.modules()]
    with torch.no_grad():
        model(x)
    for h in hs:
        h.remove()
    return total[0]


def export_and_load(model, x, memest, batch, **kw):
    from memest_export import export_to_file
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        doc = export_to_file(model, [x], path, **kw)
        res = memest_json(memest, path, batch)
    finally:
        os.unlink(path)
    return doc, res


def case_torchvision(memest, builder):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, builder)()
    x = torch.randn(2, 3, 224, 224)
    doc, res = export_and_load(model, x, memest, 2, name=builder)
    want = sum(p.numel() for p in model.parameters())
    check(res["params"]["total"] == want, "%s: memest %d parameters, PyTorch %d"
          % (builder, res["params"]["total"], want))
    model.eval()
    macs = forward_macs(model, x)
    check(res["flops"]["forward_macs"] == macs, "%s: memest %d forward MACs at batch 2, the layers' shapes %d"
          % (builder, res["flops"]["forward_macs"], macs))
    last = res["layers"][-1]
    check(last["output_shape"] == [2, 1000], "%s: output %s" % (builder, last["output_shape"]))
    # names are the modules' qualified names
    names = {n["name"] for n in doc["layers"]}
    leaves = [n for n, m in model.named_modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    missing = [n for n in leaves if n not in names]
    check(not missing, "%s: modules without their node: %s" % (builder, missing[:5]))


def case_resnet18(memest):
    case_torchvision(memest, "resnet18")


def case_mobilenet_v3_small(memest):
    case_torchvision(memest, "mobilenet_v3_small")


def custom_model():
    import torch
    import torch.nn as nn

    class Tokens(nn.Module):
        """Token ids -> embeddings, a class token and a position embedding used
        in forward(), a view on the batch and a residual."""

        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(100, 16)
            self.cls = nn.Parameter(torch.zeros(1, 1, 16))
            self.pos = nn.Parameter(torch.zeros(1, 9, 16))
            self.fc = nn.Linear(16, 16)
            self.head = nn.Linear(9 * 16, 5)

        def forward(self, ids):
            x = self.embed(ids)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
            x = x + torch.relu(self.fc(x))
            return self.head(x.view(x.size(0), -1))
    return Tokens()


def case_custom(memest):
    import torch
    model = custom_model()
    ids = torch.randint(0, 100, (2, 8))
    doc, res = export_and_load(model, ids, memest, 4)
    want = sum(p.numel() for p in model.parameters())
    check(res["params"]["total"] == want, "custom: memest %d parameters, PyTorch %d" % (res["params"]["total"], want))
    check(doc["inputs"] == [{"name": "ids", "shape": [8], "dtype": "int64"}], "custom: inputs %s" % doc["inputs"])
    by = {n["name"]: n for n in doc["layers"]}
    check(by.get("cls", {}).get("type") == "parameter" and by["cls"]["shape"] == [1, 1, 16],
          "custom: the class token is a parameter node: %s" % by.get("cls"))
    check(by.get("pos", {}).get("type") == "parameter", "custom: the position embedding is a parameter node")
    check(by.get("expand", {}).get("size") == ["batch", -1, -1], "custom: expand %s" % by.get("expand"))
    check(by.get("view", {}).get("shape") == ["batch", -1], "custom: view %s" % by.get("view"))
    with torch.no_grad():
        out = model(torch.randint(0, 100, (4, 8)))
    check(res["layers"][-1]["output_shape"] == list(out.shape),
          "custom: output %s, PyTorch %s" % (res["layers"][-1]["output_shape"], list(out.shape)))
    macs = 4 * 9 * 16 * 16 + 4 * 9 * 16 * 5       # fc on 4 x 9 tokens, head on 4 x 144
    check(res["flops"]["forward_macs"] == macs, "custom: MACs %d, want %d" % (res["flops"]["forward_macs"], macs))


def case_writes(memest):
    """In-place writes through views (export_models.Writes): the file holds
    copyslices nodes where PyTorch rebases a tensor on CopySlices; the
    parameters, the output shape and the saved activations at batch 3 equal
    PyTorch's (tests/tools/torch_figures.py measures them here)."""
    import torch
    import export_models
    sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
    import torch_figures
    torch.manual_seed(0)
    model = export_models.Writes()
    doc, res = export_and_load(model, torch.randn(2, 5, 16), memest, 3)
    types = [n["type"] for n in doc["layers"]]
    check(types.count("copyslices") == 6, "writes: %d copyslices nodes, want 6 (b, attn, y and head twice): %s"
          % (types.count("copyslices"), types))
    want = sum(p.numel() for p in model.parameters())
    check(res["params"]["total"] == want, "writes: memest %d parameters, PyTorch %d" % (res["params"]["total"], want))
    x = torch.randn(3, 5, 16)
    with torch.no_grad():
        out = model(x)
    check(res["layers"][-1]["output_shape"] == list(out.shape), "writes: output %s" % res["layers"][-1]["output_shape"])
    saved = torch_figures.measure(model, [x])["saved_activation_bytes"]
    check(res["memory"]["activations"] == saved, "writes: memest saves %d bytes, PyTorch %d"
          % (res["memory"]["activations"], saved))


def case_shared(memest):
    """A module called three times (export_models.Recurrent): its later calls
    are nodes with tie_params; parameters counted once and the saved
    activations at batch 3 equal PyTorch's (measured here)."""
    import torch
    import export_models
    sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
    import torch_figures
    torch.manual_seed(0)
    model = export_models.Recurrent()
    doc, res = export_and_load(model, torch.randn(2, 8), memest, 3)
    ties = sorted((n["name"], n["tie_params"]) for n in doc["layers"] if "tie_params" in n)
    want_ties = [("cell_1", "cell"), ("cell_2", "cell"), ("norm_1", "norm"), ("norm_2", "norm")]
    check(ties == want_ties, "shared: tie_params %s, want %s" % (ties, want_ties))
    want = sum(p.numel() for p in model.parameters())
    check(res["params"]["total"] == want, "shared: memest %d parameters, PyTorch %d" % (res["params"]["total"], want))
    saved = torch_figures.measure(model, [torch.randn(3, 8)])["saved_activation_bytes"]
    check(res["memory"]["activations"] == saved, "shared: memest saves %d bytes, PyTorch %d"
          % (res["memory"]["activations"], saved))


def run_cli(args):
    p = subprocess.run([sys.executable, LAUNCHER] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       cwd=HERE)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def case_unsupported(memest):
    rc, out, err = run_cli(["export_models:Unsupported", "--input", "4,8", "-o", "-"])
    import export_models
    line = inspect.getsourcelines(export_models.Block.forward)
    src = [i for i, t in enumerate(line[0]) if "cumsum" in t][0] + line[1]
    check(rc == 3, "unsupported: exit %d, want 3 (%s)" % (rc, err.strip()))
    check("torch.cumsum" in err and "'block'" in err and "export_models.py:%d" % src in err,
          "unsupported: the message names the op, the module and the line: %s" % err.strip())
    check(err.count("\n") == 1, "unsupported: one line: %r" % err)


def case_untraceable(memest):
    rc, out, err = run_cli(["export_models:Branchy", "--input", "4", "-o", "-"])
    check(rc == 3, "untraceable: exit %d, want 3 (%s)" % (rc, err.strip()))
    check("dynamic control flow" in err and "Branchy" in err, "untraceable: %s" % err.strip())


def case_cli(memest):
    rc, out, err = run_cli(["export_models:Unsupported"])
    check(rc == 2 and "--input" in err, "cli: no --input: exit %d %s" % (rc, err.strip()))
    rc, out, err = run_cli(["export_models:Nope", "--input", "4"])
    check(rc == 2 and "Nope" in err, "cli: unknown model: exit %d %s" % (rc, err.strip()))
    rc, out, err = run_cli(["export_models:Tiny", "--input", "4", "--kwargs", '{"width": 6}'])
    doc = json.loads(out) if rc == 0 else {}
    check(rc == 0 and doc.get("layers", [{}])[0].get("out_features") == 6, "cli: -o -: exit %d %s" % (rc, err))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tiny.json")
        rc, out, err = run_cli(["export_models:Tiny", "--input", "4", "-o", path, "--check", "--memest", memest])
        check(rc == 0 and "matches" in err, "cli: --check: exit %d %s" % (rc, err.strip()))
        # a file memest reads differently: the check says so (exit 4)
        from memest_export import check as chk
        import export_models
        model = export_models.Tiny(width=6)
        doc = json.load(open(path))
        doc["layers"][0]["out_features"] = 7
        with open(path, "w") as f:
            json.dump(doc, f)
        import torch
        diffs = chk.compare(model, doc, path, [torch.zeros(2, 4)], 0, 2, memest, True)
        check(any("parameters" in x for x in diffs), "cli: a wrong file passes the check: %s" % diffs)


def case_batchexpr(memest):
    from memest_export.batchexpr import merge_shape
    # view(B, -1): the batch entry
    check(merge_shape([2, -1], [3, -1], 2, 3, True) == ["batch", -1], "batchexpr: view(B, -1)")
    # Swin: reshape(B * nW, 49, C) -> -1; view(B, nW, ...) -> batch
    check(merge_shape([128, 49, 96], [192, 49, 96], 2, 3, True) == [-1, 49, 96], "batchexpr: B*nW")
    check(merge_shape([2, 64, 3], [3, 64, 3], 2, 3, True) == ["batch", 64, 3], "batchexpr: B, nW")
    # two entries that are not the batch, or one beside an explicit -1: not writable
    check(merge_shape([4, 6], [6, 9], 2, 3, True) is None, "batchexpr: two inferred entries")
    check(merge_shape([4, -1], [6, -1], 2, 3, True) is None, "batchexpr: beside -1")
    # expand and zeros take no -1 for a batch multiple
    check(merge_shape([4, 5], [6, 5], 2, 3, False) is None, "batchexpr: expand(2B)")
    check(merge_shape([2, 5], [3, 5], 2, 3, False) == ["batch", 5], "batchexpr: zeros(B, 5)")
    check(merge_shape([2, 5], [3, 5, 1], 2, 3, True) is None, "batchexpr: rank differs")


def case_escape(memest):
    """memest_export.escape follows memest's rule (src/base/escape.c): these are
    memest_esc_text's results for the same bytes (a string from undecodable
    bytes holds surrogates, as argv and file names decode them)."""
    from memest_export.escape import cut, esc_text
    table = [(b"a\x1bb", "a\\x1Bb"), (b"tab\there\nnl", "tab\\x09here\\x0Anl"),
             (b"\xc2\x85\xe2\x80\xae\xe2\x80\xa8\xef\xbf\xbe",
              "\\xC2\\x85\\xE2\\x80\\xAE\\xE2\\x80\\xA8\\xEF\\xBF\\xBE"),
             ("\u00e9\u20ac\U0001f600".encode(), "\u00e9\u20ac\U0001f600"),
             (b"\xff\xc3x\xed\xa0\x80\xf4\x90\x80\x80\xc0\xaf",
              "\\xFF\\xC3x\\xED\\xA0\\x80\\xF4\\x90\\x80\\x80\\xC0\\xAF"),
             (b"back\\x1B\x7f", "back\\x1B\\x7F")]
    for raw, want in table:
        got = esc_text(raw.decode("utf-8", "surrogateescape"))
        check(got == want, "escape: %r gives %r, memest %r" % (raw, got, want))
        check(esc_text(got) == got, "escape: escaping twice changes %r" % got)
    check(esc_text("\ud800x") == "\\xED\\xA0\\x80x", "escape: a lone surrogate")
    check(cut("\x1b" * 10, 3) == "\\x1B" * 3 + "...", "escape: cut")


def case_progress(memest):
    """Progress on stderr only when it is a terminal (script(1) gives one), erased at the end."""
    import shlex
    import shutil
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tiny.json")
        args = ["export_models:Tiny", "--input", "4", "-o", path]
        rc, out, err = run_cli(args)
        check(rc == 0 and err == "", "progress: stderr not a terminal stays empty: exit %d %r" % (rc, err))
        script = shutil.which("script")
        check(script is not None, "progress: script(1) (util-linux) is needed")
        if not script:
            return
        cmd = " ".join(shlex.quote(a) for a in [sys.executable, LAUNCHER] + args)
        p = subprocess.run([script, "-qec", cmd, "/dev/null"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, cwd=HERE)
        tty = p.stdout.decode(errors="replace")
        check(p.returncode == 0, "progress: under script: exit %d %r" % (p.returncode, tty[-200:]))
        for stage in ("importing PyTorch", "building export_models:Tiny", "recording at batch 2 (1/2)",
                      "recording at batch 3 (2/2)"):
            check("\rmemest-export: " + stage in tty, "progress: no line %r in %r" % (stage, tty[:300]))
        check(tty.endswith("\r"), "progress: the line is not erased at the end: %r" % tty[-60:])
        p = subprocess.run([script, "-qec", cmd + " 2>/dev/null", "/dev/null"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, cwd=HERE)
        check("memest-export:" not in p.stdout.decode(errors="replace"),
              "progress: shown although only stdout is a terminal")


def case_api(memest):
    """The library's own hostile cases (in process, no child): export_to_file
    onto a symbolic link, a FIFO and a folder; forward() exiting, swallowing
    the recorder's error, raising text with control bytes."""
    import threading
    import torch
    import torch.nn as nn
    from memest_export import ExportError, export, export_to_file

    class Net(nn.Module):
        def __init__(self, mode=""):
            super().__init__()
            self.fc, self.mode = nn.Linear(4, 2), mode

        def forward(self, x):
            if not isinstance(x, torch.fx.Proxy):
                if self.mode == "exit":
                    sys.exit(0)
                if self.mode == "swallow":
                    try:
                        torch.cumsum(x, 1)
                    except Exception:
                        pass
                if self.mode == "ctl":
                    raise ValueError("\x1b[2Jgone\x07")
            return self.fc(x)

    x = torch.randn(2, 4)
    with tempfile.TemporaryDirectory() as d:
        real, link = os.path.join(d, "real.json"), os.path.join(d, "link.json")
        with open(real, "w") as f:
            f.write("old")
        os.chmod(real, 0o640)
        os.symlink("real.json", link)
        export_to_file(Net(), [x], link)
        check(os.path.islink(link) and os.readlink(link) == "real.json", "api: the link is no longer a link")
        check(json.load(open(real))["layers"][0]["type"] == "linear", "api: real.json is not the model")
        check(os.stat(real).st_mode & 0o777 == 0o640, "api: real.json lost its mode")
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        got = []
        reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
        reader.start()
        export_to_file(Net(), [x], fifo)
        reader.join(10)
        check(got and json.loads(got[0])["name"] == "Net", "api: the FIFO's reader got no model")
        check(sorted(os.listdir(d)) == ["fifo", "link.json", "real.json"], "api: left %s" % os.listdir(d))
        try:
            export_to_file(Net(), [x], d)
            check(False, "api: a folder as the output is written")
        except ExportError as e:
            check(e.code == 6 and "Is a directory" in str(e), "api: folder: %d %s" % (e.code, e))
    for mode, code, frag in (("exit", 3, "forward() at batch 2 raised SystemExit: 0"),
                             ("swallow", 3, "unsupported op torch.cumsum"),
                             ("ctl", 3, "raised ValueError: \\x1B[2Jgone\\x07")):
        try:
            export(Net(mode), [x])
            check(False, "api: %s: exported" % mode)
        except ExportError as e:
            check(e.code == code and frag in str(e), "api: %s: %d %s" % (mode, e.code, e))


def case_torchvision_names(memest):
    """torchvision:NAME takes list_models()'s names (quantized_resnet18 is the
    quantization namespace's resnet18, found by get_model_builder) and builds
    without downloading (weights and weights_backbone None unless --kwargs
    gives them); quantized modules, a batch-multiple constant."""
    import torch
    import torchvision
    from memest_export import cli
    from memest_export.errors import ExportError, UsageError
    import export_models
    if hasattr(torchvision.models, "get_model_builder"):   # torchvision 0.14 and later
        want = torchvision.models.get_model_builder("quantized_resnet18")
        got, kw = cli.torchvision_builder("quantized_resnet18", {})
        check(got is want and kw.get("weights", 1) is None,
              "torchvision_names: quantized_resnet18 -> %s %s" % (getattr(got, "__module__", got), kw))
        for name in torchvision.models.list_models():
            try:
                cli.torchvision_builder(name, {})
            except UsageError as e:
                check(False, "torchvision_names: %s refused: %s" % (name, e))
    got, kw = cli.torchvision_builder("lraspp_mobilenet_v3_large", {"num_classes": 3})
    check(got is torchvision.models.segmentation.lraspp_mobilenet_v3_large
          and kw == {"num_classes": 3, "weights": None, "weights_backbone": None},
          "torchvision_names: lraspp keyword arguments %s" % kw)
    got, kw = cli.torchvision_builder("resnet18", {"weights": "IMAGENET1K_V1"})
    check(kw == {"weights": "IMAGENET1K_V1"}, "torchvision_names: --kwargs weights replaced: %s" % kw)
    rc, out, err = run_cli(["torchvision:resnet_18", "--input", "3,32,32"])
    check(rc == 2 and "no model builder 'resnet_18'" in err, "torchvision_names: unknown: exit %d %s" % (rc, err))
    # no download: the hub's loader refuses, and the builder still builds
    import torch.hub
    real = torch.hub.load_state_dict_from_url

    def no_download(*a, **k):
        raise AssertionError("a download was attempted")
    torch.hub.load_state_dict_from_url = no_download
    try:
        m = cli.load_model("torchvision:lraspp_mobilenet_v3_large", {"num_classes": 3})
        check(isinstance(m, torch.nn.Module), "torchvision_names: lraspp not built")
    except UsageError as e:
        check(False, "torchvision_names: lraspp: %s" % e)
    finally:
        torch.hub.load_state_dict_from_url = real
    # a quantizable model's float form exports; its parameters are PyTorch's
    model = cli.load_model("torchvision:quantized_shufflenet_v2_x0_5", {})
    x = torch.randn(2, 3, 64, 64)
    doc, res = export_and_load(model, x, memest, 2, name="q")
    want = sum(p.numel() for p in model.parameters())
    check(res["params"]["total"] == want, "torchvision_names: quantizable shufflenet: memest %d parameters, "
          "PyTorch %d" % (res["params"]["total"], want))
    # a converted (quantized) model: refused, saying why
    try:
        export_and_load(export_models.Quantized(), torch.randn(2, 4), memest, 2)
        check(False, "torchvision_names: a quantized module exported")
    except ExportError as e:
        check("quantized" in str(e) and "'quant'" in str(e), "torchvision_names: quantized: %s" % e)
    # torch.zeros(B * H * W, C): zeros [batch, H*W, C] reshaped (PyTorch 2's
    # fx traces torch.zeros with traced sizes; 1.13's refuses it as control flow)
    if int(torch.__version__.split(".")[0]) < 2:
        print("torchvision_names: the batch-multiple constant needs PyTorch 2's fx (have %s)" % torch.__version__)
        return
    model = export_models.Grid()
    for b in (2, 5):
        x = torch.randn(b, 2, 3, 4)
        doc, res = export_and_load(model, x, memest, b)
        want = list(model(x).shape)
        check(res["layers"][-1]["output_shape"] == want, "torchvision_names: grid at batch %d: %s, want %s"
              % (b, res["layers"][-1]["output_shape"], want))


def forward_peak(memest, path, *extra):
    """memest's forward peak of the training step (or of --inference): the
    largest live tensor bytes of its timeline's forward rows, without the
    cuBLAS workspace (the reference counts tensors only)."""
    import csv
    fd, tl = tempfile.mkstemp(suffix=".csv")
    os.close(fd)
    try:
        p = subprocess.run([memest, path, "--batch", "2", "--timeline", tl] + list(extra),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            raise AssertionError("memest %s: %s" % (path, p.stderr.decode()))
        with open(tl) as f:
            return max(int(r["live_tensors"]) - int(r["workspace"]) for r in csv.DictReader(f)
                       if r["phase"] == "forward")
    finally:
        os.unlink(tl)


def case_lifetimes(memest):
    """Python's lifetimes (issue 33 item 3): the U-Net's forward() keeps its
    locals until it returns. The exporter marks them "held_until"; memest's
    forward peaks then equal PyTorch 2.6's (tests/tools/unet_peak.py,
    tests/reference/unet_peaks.json: live storages counted op by op), and
    without the marks they fall short (the check can fail)."""
    import torch
    import export_models
    from memest_export import export_to_file
    with open(os.path.join(ROOT, "tests", "reference", "unet_peaks.json")) as f:
        ref = json.load(f)
    torch.manual_seed(0)
    model = export_models.UNet()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    bare = path[:-5] + "_bare.json"
    try:
        doc = export_to_file(model, [torch.randn(2, *ref["shape"])], path)
        held = {n["name"]: n["held_until"] for n in doc["layers"] if "held_until" in n}
        # Up.forward's upsampled x1 lives through self.conv(x) after the cat
        check(held.get("up1.up") == "up1.conv.net.5", "lifetimes: up1.up held until %s" % held.get("up1.up"))
        # UNet.forward's x1 (inc's output) until forward() returns, past up3's cat
        check(held.get("inc.net.5") == "outc", "lifetimes: inc.net.5 held until %s" % held.get("inc.net.5"))
        for n in doc["layers"]:
            n.pop("held_until", None)
        with open(bare, "w") as f:
            json.dump(doc, f)
        # SGD and no loss: no state and no target, as in the reference
        for run, extra in (("train", ["--optim", "sgd", "--loss", "none"]), ("inference", ["--inference"])):
            want = ref[run]["forward_peak"]
            got, short = forward_peak(memest, path, *extra), forward_peak(memest, bare, *extra)
            print("lifetimes %s: memest %d (without held_until %d), PyTorch %d" % (run, got, short, want))
            check(abs(got - want) <= want // 1000, "lifetimes %s: memest %d, PyTorch %d" % (run, got, want))
            check(short < want - want // 100, "lifetimes %s: without held_until memest %d, not short of %d"
                  % (run, short, want))
    finally:
        for p in (path, bare):
            if os.path.exists(p):
                os.unlink(p)


CASES = {"api": case_api, "escape": case_escape, "resnet18": case_resnet18, "mobilenet_v3_small": case_mobilenet_v3_small, "custom": case_custom,
         "unsupported": case_unsupported, "untraceable": case_untraceable, "cli": case_cli,
         "batchexpr": case_batchexpr, "writes": case_writes, "shared": case_shared,
         "progress": case_progress, "torchvision_names": case_torchvision_names,
         "lifetimes": case_lifetimes}
NEEDS_TORCHVISION = {"resnet18", "mobilenet_v3_small", "torchvision_names"}
NO_TORCH = {"batchexpr", "escape"}


def main():
    case, memest = sys.argv[1], os.path.abspath(sys.argv[2])
    if case not in NO_TORCH:
        if not import_torch():
            print("SKIP: PyTorch cannot be imported by %s" % sys.executable)
            return SKIP
        if case in NEEDS_TORCHVISION:
            try:
                import torchvision  # noqa: F401
            except ImportError:
                print("SKIP: torchvision cannot be imported by %s" % sys.executable)
                return SKIP
    sys.path.insert(0, HERE)
    CASES[case](memest)
    if failures:
        return 1
    print("ok: %s" % case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
