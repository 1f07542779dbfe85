-- Query error: compare a query on the raw table with its estimate on the anonymized table.
--
-- The estimate rewrites the query with sqlglot (kanon_duckdb/rewrite): every anonymized row counts
-- with the fraction of its generalized values that satisfy the WHERE clause (uniform inside
-- [c_min, c_max], integer points for integer columns; uniform over the leaves under a taxonomy
-- label). rel_error = |A - a| / |A| (Kara & Eyupoglu 2023, cof-mondrian-outliers.txt eq. 8);
-- 0 when A = a = 0, NULL when only A = 0 or a group is missing on one side.
--
-- raw_tbl, anon_tbl and workload_tbl are any relation k_anonymize reads: a table or view, a file
-- path or glob, a read_* call as a string (kanon_duckdb/relation.py), an object registered on the
-- caller's connection or cursor (coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT names the caller to the UDFs).
-- The Python UDFs called here (__kanon_query_workload, __kanon_workload_errors, __kanon_rewrite)
-- are registered by udfs/query_error.py; they read table metadata through a cursor, which does
-- not see TEMP tables and uncommitted changes (the other macros of this file are routed:
-- kanon_duckdb/caller_macros.py). __kanon_query_error_sql (udfs/caller_read.py) reads such a
-- relation in the caller's query: the raw answer there, the estimate on a cursor the rows are
-- handed to. A TEMP table or view of the caller that shadows a table named alike is refused
-- (__kanon_unshadowed, sql/00_shadow.sql), never silently swapped for that table.

-- kanon_rewrite(sql, anon_tbl): the SQL that estimates the query `sql` (written against the raw
-- table) on the anonymized table `anon_tbl`, as readable text.
CREATE OR REPLACE MACRO kanon_rewrite(sql, anon_tbl) AS
    __kanon_rewrite(sql, anon_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT);

-- kanon_rel_error(a, e): |a - e| / |a|; 0 when a = e = 0; NULL when a = 0 <> e (undefined) or a
-- side is NULL (a group missing on one side).
CREATE OR REPLACE MACRO kanon_rel_error(a, e) AS
    CAST(CASE WHEN a = 0 AND e = 0 THEN 0 WHEN a = 0 THEN NULL ELSE abs(a - e) / abs(a) END AS DOUBLE);

-- query_error(sql, raw_tbl, anon_tbl): per result row (group): the group keys, [measure,]
-- raw_value, anon_estimate, rel_error.
CREATE OR REPLACE MACRO query_error(sql, raw_tbl, anon_tbl) AS TABLE
    FROM query(__kanon_query_error_sql(sql, raw_tbl, anon_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT))
    WHERE __kanon_unshadowed(raw_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT)
      AND __kanon_unshadowed(anon_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT);

-- query_workload(raw_tbl, n, seed, dims, qi): n random COUNT(*) range/equality queries over dims
-- quasi-identifiers each (LeFevre et al. 2006); QIs from qi or from the latest kanon_runs record.
CREATE OR REPLACE MACRO query_workload(raw_tbl, n := 1000, seed := 0, dims := 2, qi := NULL) AS TABLE
    SELECT unnest(__kanon_query_workload(raw_tbl, n, seed, dims, qi, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT),
                  recursive := true)
    WHERE __kanon_unshadowed(raw_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT);

-- workload_query_errors(workload_tbl, raw_tbl, anon_tbl): qid, raw_value, anon_estimate, rel_error
-- for every query of a workload table (columns qid, sql): each table is read once and every query
-- evaluated on its class summary, with the same estimate as query_error.
CREATE OR REPLACE MACRO workload_query_errors(workload_tbl, raw_tbl, anon_tbl) AS TABLE
    SELECT qid, raw_value, anon_estimate, kanon_rel_error(raw_value, anon_estimate) AS rel_error
    FROM (SELECT unnest(__kanon_workload_errors(workload_tbl, raw_tbl, anon_tbl,
                                                coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT), recursive := true))
    WHERE __kanon_unshadowed(workload_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT)
      AND __kanon_unshadowed(raw_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT)
      AND __kanon_unshadowed(anon_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT);

-- workload_error(workload_tbl, raw_tbl, anon_tbl): one row summarizing the relative errors; queries
-- whose raw answer is 0 (or NULL) are skipped and counted in n_skipped.
CREATE OR REPLACE MACRO workload_error(workload_tbl, raw_tbl, anon_tbl) AS TABLE
    SELECT count(*) AS n_queries,
           count(*) FILTER (WHERE raw_value IS NULL OR raw_value = 0) AS n_skipped,
           avg(rel_error) FILTER (WHERE raw_value <> 0) AS mean_rel_error,
           median(rel_error) FILTER (WHERE raw_value <> 0) AS median_rel_error,
           quantile_cont(rel_error, 0.95) FILTER (WHERE raw_value <> 0) AS p95_rel_error,
           max(rel_error) FILTER (WHERE raw_value <> 0) AS max_rel_error
    FROM workload_query_errors(workload_tbl, raw_tbl, anon_tbl);
