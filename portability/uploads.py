"""Uploads written straight into the bank's own folder.

Django keeps a large upload in a temporary file of the machine (``/tmp``) until the view runs; an
archive holds a bank's memories, so this handler receives it instead into a temporary file inside the
bank's folder of the first root, and the view puts it in place under its sanitised name (in the root
the form chose), or drops it. Nothing is kept beyond the size cap.
"""

from __future__ import annotations

from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopFutureHandlers
from django.http import HttpRequest

from portability.paths import Location, PendingFile


class TooLarge(Exception):
    pass


class BankFolderUpload(FileUploadHandler):
    """Receives the one file of an upload form into ``folder``; a second file in the body is refused."""

    def __init__(self, request: HttpRequest, folder: Location, cap: int) -> None:
        super().__init__(request)
        self.folder, self.cap = folder, cap
        self.pending: PendingFile | None = None

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        if self.pending is not None:
            raise TooLarge("Upload one file at a time.")
        self.pending = PendingFile(self.folder)
        raise StopFutureHandlers

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        assert self.pending is not None
        if self.pending.size + len(raw_data) > self.cap:
            raise TooLarge(f"The file is larger than the {self.cap} byte limit.")
        self.pending.write(raw_data)

    def file_complete(self, file_size: int) -> UploadedFile:
        return UploadedFile(file=None, name=self.file_name, size=file_size)

    def upload_interrupted(self) -> None:
        self.discard()

    def discard(self) -> None:
        if self.pending is not None:
            self.pending.discard()


__all__ = ["BankFolderUpload", "TooLarge"]
