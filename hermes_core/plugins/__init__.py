"""Plugin discovery and loading: entry points, the drop-in folder and in-process plugins."""

from ._dropin import ScanVerdict, scan_directory, scan_source
from ._entrypoints import GROUP, EntryPointInfo, discover
from ._manager import PluginHost, PluginLoadError, PluginRecord

__all__ = [
    "GROUP",
    "EntryPointInfo",
    "PluginHost",
    "PluginLoadError",
    "PluginRecord",
    "ScanVerdict",
    "discover",
    "scan_directory",
    "scan_source",
]
