"""The OpenAPI document and a readable docs page (server-rendered: no inline scripts, no CDN)."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from drf_spectacular.generators import SchemaGenerator


def openapi_document() -> dict[str, Any]:
    generator = SchemaGenerator(patterns=None, title="MemoryHub API")
    return generator.get_schema(request=None, public=True)


def openapi_json(request: HttpRequest) -> JsonResponse:
    return JsonResponse(openapi_document(), json_dumps_params={"indent": 1})


def api_docs(request: HttpRequest) -> HttpResponse:
    document = openapi_document()
    operations = []
    for path, methods in document.get("paths", {}).items():
        for method, op in methods.items():
            body_ref = (op.get("requestBody", {}).get("content", {}).get("application/json", {})
                        .get("schema", {}).get("$ref", ""))
            body_name = body_ref.rsplit("/", 1)[-1] if body_ref else ""
            body = document["components"]["schemas"].get(body_name) if body_name else None
            operations.append({
                "method": method.upper(), "path": path, "summary": op.get("summary", ""),
                "description": op.get("description", ""), "parameters": op.get("parameters", []),
                "body_name": body_name, "body": json.dumps(body, indent=2) if body else "",
            })
    return render(request, "api/docs.html", {"operations": operations, "info": document.get("info", {})})
