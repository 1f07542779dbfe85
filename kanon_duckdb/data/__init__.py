"""Example data shipped with kanon-duckdb (see adult/SOURCE.md and adult/NOTICE.md)."""
