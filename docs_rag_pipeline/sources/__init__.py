from .base import ScanResult, Source, content_hash
from .local import LocalSource, source_for

__all__ = ["LocalSource", "ScanResult", "Source", "content_hash", "source_for"]
