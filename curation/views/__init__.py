"""Operator screens, one module per area. Every view renders the full page, or its partial for HTMX."""
