"""Path containment for every file import, export, upload, download, listing and backup touches.

``rules``: what a path may look like, and the root it must resolve into (pure). ``layout``: where a
bank's files live inside a root and who may read or write there (pure). ``trash``: a deleted bank's
folder set aside. ``fs``: every file operation,
through directory descriptors from the root down; ``writes``: every write through them. ``locate``: from text to a ``Location``.
"""

from portability.paths.fs import (
    Location,
    list_entries,
    move_to,
    open_file_fd,
    opened_dir,
    remove_stale_temporaries,
    walk_files,
)
from portability.paths.layout import (
    BANKS_DIR,
    bank_parts,
    check_cli_write,
    check_read,
    check_write,
    in_layout,
    owner,
    shown_bank_dir,
)
from portability.paths.locate import as_location, locate, locate_stored
from portability.paths.rules import (
    CONTAINMENT_REQUIRED,
    ENV_ROOTS,
    MAX_COMPONENT_BYTES,
    MAX_PATH_CHARS,
    MAX_SEGMENTS,
    MAX_UPLOAD_NAME_CHARS,
    PathNotAllowed,
    configured_roots,
    resolve_contained,
    root_of,
    sanitize_upload_name,
)
from portability.paths.writes import (
    MARKER,
    DirectoryWriter,
    PendingFile,
    atomic_write,
    directory_export,
    spool_beside,
)

__all__ = [
    "BANKS_DIR", "CONTAINMENT_REQUIRED", "ENV_ROOTS", "MARKER", "MAX_COMPONENT_BYTES", "MAX_PATH_CHARS", "MAX_SEGMENTS",
    "MAX_UPLOAD_NAME_CHARS", "DirectoryWriter", "Location", "PendingFile", "PathNotAllowed", "as_location", "atomic_write",
    "bank_parts", "check_cli_write", "check_read", "check_write", "configured_roots", "in_layout", "directory_export",
    "list_entries", "locate", "locate_stored", "move_to", "open_file_fd", "opened_dir", "owner", "remove_stale_temporaries", "spool_beside",
    "resolve_contained", "root_of", "sanitize_upload_name", "shown_bank_dir", "walk_files",
]
