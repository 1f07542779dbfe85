-- kanon_compare(tables): one row per anonymized table of the list with its utility metrics.
-- tables is a VARCHAR[] of table, view, file or registered object names (e.g. ['adult_k5',
-- 'adult_k10']; objects registered on the calling connection or cursor count too); the
-- metrics are the macros of the same name (gcp, discernibility, cavg, suppression, total_il,
-- gen_total_il). For names held in a column use the scalar form: SELECT t, kanon_metrics(t).gcp
-- FROM (VALUES ('a_k5'), ('a_k10')) v(t).
CREATE OR REPLACE MACRO kanon_compare(tables) AS TABLE
SELECT t AS "table", unnest(__kanon_metrics(t, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT))
FROM (SELECT unnest(tables) AS t)
WHERE __kanon_unshadowed(t, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT);   -- sql/00_shadow.sql

-- kanon_metrics(tbl): the utility metrics of one anonymized table as a STRUCT; tbl may come from
-- a column (the metric macros themselves need a constant table name).
CREATE OR REPLACE MACRO kanon_metrics(tbl) AS
    CASE WHEN __kanon_unshadowed(tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT)
         THEN __kanon_metrics(tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT) END;
