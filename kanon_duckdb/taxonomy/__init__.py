"""Taxonomy trees: the ``kanon_taxonomy`` table, builders, loaders and validation.

- ``tree``: validation and the array index the kernels use (``build_index``, ``TaxonomyIndex``).
- ``builders``: pure functions returning (child, parent) edge lists.
- ``store``: read/write ``kanon_taxonomy`` through a DuckDB connection.
"""
from .builders import (arx_hierarchy_edges, date_edges, flat_edges, interval_edges,
                       masking_edges)
from .store import (build_date_taxonomy, build_flat_taxonomy, build_interval_taxonomy,
                    build_masking_taxonomy, check_column, column_value_counts,
                    ensure_taxonomy_table, insert_edges, load_arx_taxonomy, read_edges,
                    read_index, validate_coverage)
from .tree import TaxonomyIndex, build_index, flat_index

__all__ = [
    "TaxonomyIndex", "build_index", "flat_index",
    "arx_hierarchy_edges", "interval_edges", "masking_edges", "date_edges", "flat_edges",
    "ensure_taxonomy_table", "insert_edges", "read_edges", "read_index", "validate_coverage",
    "column_value_counts", "check_column", "build_interval_taxonomy", "build_masking_taxonomy",
    "build_date_taxonomy", "build_flat_taxonomy", "load_arx_taxonomy",
]
