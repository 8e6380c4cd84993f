"""memest-export: a PyTorch model as a memest model file.

    from memest_export import export, export_to_file
    doc = export(model, [torch.randn(2, 3, 224, 224)])   # the document, a dict

See README.md, "memest-export"."""

from .core import export, export_to_file, dumps
from .errors import ExportError, UsageError

__all__ = ["export", "export_to_file", "dumps", "ExportError", "UsageError"]
