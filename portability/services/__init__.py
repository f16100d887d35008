"""Import and export of whole banks. The API, the UI, the commands and the tasks all call these."""

from portability.services.exporter import ExportReport, archive_export, archive_stream
from portability.services.importer import ImportReport, archive_import

__all__ = ["ExportReport", "ImportReport", "archive_export", "archive_import", "archive_stream"]
