"""memest-export: a PyTorch model as a memest model file.

    from memest_export import export, export_to_file
    doc = export(model, [torch.randn(2, 3, 224, 224)])   # the document, a dict

See doc/memest-export.md. PyTorch is imported on first use, so that
the parts that need none (batchexpr) load without it."""

from .errors import ExportError, UsageError

__all__ = ["export", "export_to_file", "dumps", "ExportError", "UsageError"]


def __getattr__(name):
    if name in ("export", "export_to_file", "dumps"):
        from . import core
        return getattr(core, name)
    raise AttributeError("module 'memest_export' has no attribute %r" % name)
