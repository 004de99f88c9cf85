"""Plugin discovery and loading: entry points, the drop-in folder and in-process plugins."""

from ._dropin import ScanVerdict, scan_directory, scan_source
from ._entrypoints import GROUP, EntryPointInfo, discover
from ._manager import PluginHost, PluginLoadError, PluginRecord
from ._precedence import FIRST_PARTY_DISTRIBUTION, FIRST_PARTY_ENTRY_POINT, plugin_matches, source_label

__all__ = [
    "FIRST_PARTY_DISTRIBUTION",
    "FIRST_PARTY_ENTRY_POINT",
    "GROUP",
    "EntryPointInfo",
    "PluginHost",
    "PluginLoadError",
    "PluginRecord",
    "ScanVerdict",
    "discover",
    "plugin_matches",
    "scan_directory",
    "scan_source",
    "source_label",
]
