#!/usr/bin/python3
"""bitsandbytes' optimizer state, measured on a plain-PyTorch replica of its state creation.

How to run (PyTorch 2.6 through the chroot, CPU only; bitsandbytes is not installed here):

    ../shared/tools/torch2-chroot python3 tests/tools/bnb_optim_state.py > tests/reference/bnb_optim_state.json

Replicated, from bitsandbytes 0.50.2.dev0 (commit 95f9af3; the same since 0.44.0, where the
block size went from 2048 to 256), bitsandbytes/optim/optimizer.py:

* Optimizer8bit.__init__: with optim_bits 8 the two quantisation maps (create_dynamic_map,
  signed and unsigned: 256 float32 each, padded to 256) are made once, on the host;
* Optimizer8bit.step: for each parameter with a gradient, init_state when its state is empty,
  then the update (not replicated: one CUDA kernel, in place);
* Optimizer2State.init_state: uint8 states for optim_bits 8, float32 for 32 and whenever
  p.numel() < min_8bit_size (4096); state["step"] = 0 (an int); state1/state2 from
  get_state_buffer; with uint8, qmap1/qmap2 = the maps moved to the parameter's device (once:
  .to() of a tensor already there returns it) and absmax1/absmax2 = zeros(ceil(numel/256),
  float32);
* get_state_buffer, CUDA path (the replica runs on the CPU but takes the CUDA branch, since
  bitsandbytes falls back to unpaged zeros_like on a CPU parameter): zeros_like(p, dtype) unless
  is_paged and p.numel() >= 1e5, then functional.get_paged (cudaMallocManaged; here a host
  tensor of the same dtype and shape marked is_paged, as get_paged marks its own).

For each optimizer (AdamW8bit = Optimizer2State(optim_bits=8), PagedAdamW8bit (8, paged),
PagedAdamW32bit (32, paged)) and parameter (shape, dtype), the JSON lists the state tensors of
the parameter in the order the state dict holds them (the maps left out), each [key, nbytes,
paged], and per optimizer the bytes of the distinct map tensors its state holds.
"""
import json
import sys

import torch

from provenance import stamp  # noqa: E402

MIN_8BIT_SIZE = 4096
BLOCKSIZE = 256
PAGED_MIN = 1e5


def dynamic_map_size(signed):
    # create_dynamic_map(signed, max_exponent_bits=7, total_bits=8): 2**8 values, padded to 256
    return 256


class Replica2State(torch.optim.Optimizer):
    def __init__(self, params, optim_bits, is_paged):
        super().__init__(params, dict(lr=1e-3))
        self.optim_bits, self.is_paged = optim_bits, is_paged
        self.maps = {}
        if optim_bits == 8:
            self.maps = {"dynamic": torch.zeros(dynamic_map_size(True)),
                         "udynamic": torch.zeros(dynamic_map_size(False))}

    def state_buffer(self, p, dtype):
        if not self.is_paged or p.numel() < PAGED_MIN:
            return torch.zeros_like(p, dtype=dtype)
        buf = torch.zeros(p.shape, dtype=dtype)   # get_paged: managed memory, not the allocator's
        buf.is_paged = True
        return buf

    def init_state(self, p):
        dtype = torch.uint8 if self.optim_bits == 8 else torch.float32
        if p.numel() < MIN_8BIT_SIZE:
            dtype = torch.float32
        st = self.state[p]
        st["step"] = 0
        st["state1"] = self.state_buffer(p, dtype)
        if dtype == torch.uint8:
            st["qmap1"] = self.maps["dynamic"].to(p.device)
        st["state2"] = self.state_buffer(p, dtype)
        if dtype == torch.uint8:
            st["qmap2"] = self.maps["udynamic"].to(p.device)
            blocks = p.numel() // BLOCKSIZE + bool(p.numel() % BLOCKSIZE)
            st["absmax1"] = torch.zeros((blocks,), dtype=torch.float32)
            st["absmax2"] = torch.zeros((blocks,), dtype=torch.float32)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None and len(self.state[p]) == 0:
                    self.init_state(p)


OPTIMS = {"adamw8bit": (8, False), "paged_adamw8bit": (8, True), "paged_adamw32bit": (32, True)}
SHAPES = [(4096, 4096), (1000,), (4095,), (4096,), (4097,), (50000,), (99999,), (100000,),
          (11008, 4096)]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def main():
    out = {"source": "bitsandbytes 0.50.2.dev0 (95f9af3) bitsandbytes/optim/optimizer.py, replica",
           "cases": [], "shared": {}}
    for name, (bits, paged) in OPTIMS.items():
        for dname, dt in DTYPES.items():
            shared = {}   # the distinct map tensors of this optimizer instance
            params = [torch.nn.Parameter(torch.zeros(s, dtype=dt)) for s in SHAPES]
            for p in params:
                p.grad = torch.zeros_like(p)
            opt = Replica2State(params, bits, paged)
            opt.step()
            for p in params:
                tensors = []
                for k, v in opt.state[p].items():
                    if not isinstance(v, torch.Tensor):
                        continue
                    if k.startswith("qmap"):
                        shared[v.data_ptr()] = v.nbytes
                        continue
                    tensors.append([k, v.nbytes, bool(getattr(v, "is_paged", False))])
                out["cases"].append({"optim": name, "numel": p.numel(), "dtype": dname,
                                     "tensors": tensors})
            out["shared"].setdefault(name, sum(shared.values()))
            assert out["shared"][name] == sum(shared.values())
    out = stamp(out, "tests/tools/bnb_optim_state.py", {"torch": torch.__version__,
                "bitsandbytes": "0.50.2.dev0 (95f9af3, replicated in plain PyTorch, not imported)"})
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
