import sys, json, torch
sys.path.insert(0, 'tests/tools')
import hf_peak as hp
orig_add = hp.Live.add
names = {}
def add(self, t, where):
    st = t.untyped_storage(); ptr = st.data_ptr()
    new = ptr not in self.by_ptr and st.nbytes() > 0
    before = self.peak
    orig_add(self, t, where)
    if new:
        names[self.by_ptr[ptr]] = "%s %s %s %s" % (self.phase, where, tuple(t.shape), t.dtype)
    if self.peak > before:
        self.snap = {k: (self.bytes[k], names.get(k)) for k in self.bytes}
hp.Live.add = add
cfg = json.load(open('tests/hf/tiny/%s.json' % sys.argv[1]))
L = {}
orig_init = hp.Live.__init__
def init(self):
    orig_init(self); L['x'] = self
hp.Live.__init__ = init
r = hp.measure(cfg, sys.argv[2], torch.float32, "sgd")
print(r)
for k, (n, w) in sorted(L['x'].snap.items()):
    if w and not w.startswith("setup"):
        print(n, w)
