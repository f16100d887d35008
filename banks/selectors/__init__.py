"""Read queries of the domain."""
