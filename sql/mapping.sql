-- kanon_mapping(anon_tbl): how the published values of an anonymized table relate to raw ones
-- (kanon_duckdb/mapping.py). Full-domain runs (optimal, kgen, random, datafly): one row per
-- (qi, raw value) with the published label (categorical; every leaf of the tree the run used) or
-- range lo/hi (numeric; the distinct raw values of the run's source); ec is NULL. Local recoding:
-- one row per (class ec, qi) with the class's published label or range; raw is NULL.
-- Columns: qi, raw, ec, label, lo, hi. anon_tbl: a table, a view, a TEMP table, or an object
-- registered on the calling connection or cursor. source: the relation holding the run's raw
-- rows (default: the run's recorded source, kanon_runs.source, read again).
CREATE OR REPLACE MACRO kanon_mapping(anon_tbl, source := NULL) AS TABLE
SELECT unnest(__kanon_mapping(anon_tbl, source, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT), recursive := true)
WHERE __kanon_unshadowed(anon_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT)   -- sql/00_shadow.sql
  AND (source IS NULL OR __kanon_unshadowed(source, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT));
