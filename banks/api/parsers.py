"""The JSON body parser of /v1: DRF's, with a nesting bomb answered as a 400 instead of a crash."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from memoryhub.input_rules import MAX_NESTING


class SafeJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            # Python's decoder recurses once per level; thousands of "[" exhaust the stack.
            raise ParseError(f"JSON parse error - nested deeper than {MAX_NESTING} levels") from None
