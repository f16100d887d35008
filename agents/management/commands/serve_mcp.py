from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memoryhub.env import env_str


class Command(BaseCommand):
    help = "Serve the MCP endpoint (streamable HTTP at /mcp) with the same tokens and permissions as /v1."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default=env_str("MEMORYHUB_MCP_ADDR", "127.0.0.1:8001"))

    def handle(self, *args: Any, **options: Any) -> None:
        import uvicorn

        from agents.mcp_server import build_app

        host, _, port = options["addr"].rpartition(":")
        self.stdout.write(f"MCP endpoint: http://{options['addr']}/mcp")
        uvicorn.run(build_app(), host=host or "127.0.0.1", port=int(port), log_level="info")
