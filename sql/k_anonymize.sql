-- k_anonymize(tbl, k, algo, qi, ...): anonymize a base table, one row out per row in.
--
-- Output: every non-QI column unchanged; numeric QI c -> c_min, c_max (NULL range = any value,
-- the NULL policy); categorical QI c -> label of the class's LCA in its taxonomy (or the chosen
-- level for full-domain algorithms); ec (class id), ec_size, suppressed, kanon_run (kanon_runs.run_id).
-- __kanon_plan is deterministic and folded at bind time, which names the output columns;
-- __kanon_run runs once (materialized CTE) and returns the per-class values and a token for its
-- row->class assignment, which __kanon_ec looks up by rowid during a parallel scan of the table
-- (it fails if a scanned row was not anonymized; a row count check catches rows that vanished).
-- The per-class published columns are built first (one row per class, named after the QIs
-- through a 0-row copy of the table), so the row-level join carries scalars rather than lists.
-- taxonomies := {'sex': 'sex_v2'} (MAP or STRUCT) names the kanon_taxonomy tree of a QI (see
-- kanon_duckdb/taxonomy/store.py for the resolution order).
-- The algorithm parameters (/*KANON_PARAMS*/) are generated from the parameter registry
-- (kanon_duckdb/params.py) at registration; their values reach the UDF as one JSON object.
CREATE OR REPLACE MACRO k_anonymize(tbl, k := 2, algo := 'mondrian', qi := NULL, seed := 0,
        "numeric" := NULL, categorical := NULL, taxonomies := NULL,
        params := NULL/*KANON_PARAMS*/) AS TABLE
WITH __kanon_res AS MATERIALIZED (
    SELECT __kanon_run(tbl, to_json({'k': k, 'algo': algo, 'qi': qi, 'seed': seed,
                                     'numeric': "numeric", 'categorical': categorical,
                                     'taxonomies': taxonomies}),
                       to_json(/*KANON_PARAM_STRUCT*/), to_json(params)) AS r
),
__kanon_classes AS (
    SELECT unnest(r.classes) AS __kanon_c, (SELECT r.run_id FROM __kanon_res) AS __kanon_run_id
    FROM __kanon_res
),
__kanon_empty AS (
    FROM query('SELECT NULL AS __kanon_pi, NULL AS __kanon_pf, NULL AS __kanon_pc, * FROM '
               || __kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).tbl_sql || ' LIMIT 0')
),
__kanon_cls AS (
SELECT
    __kanon_c.ec AS __kanon_cec,
    list_extract(__kanon_c.lo_i, list_position(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).int_qi,
        alias(COLUMNS(lambda x: x = '__kanon_pi' OR list_contains(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).int_qi, x))))) AS '\0_min',
    list_extract(__kanon_c.hi_i, list_position(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).int_qi,
        alias(COLUMNS(lambda x: x = '__kanon_pi' OR list_contains(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).int_qi, x))))) AS '\0_max',
    list_extract(__kanon_c.lo_f, list_position(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).float_qi,
        alias(COLUMNS(lambda x: x = '__kanon_pf' OR list_contains(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).float_qi, x))))) AS '\0_min',
    list_extract(__kanon_c.hi_f, list_position(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).float_qi,
        alias(COLUMNS(lambda x: x = '__kanon_pf' OR list_contains(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).float_qi, x))))) AS '\0_max',
    list_extract(__kanon_c.labels, list_position(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).cat_qi,
        alias(COLUMNS(lambda x: x = '__kanon_pc' OR list_contains(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).cat_qi, x))))) AS '\0',
    __kanon_c.size AS __kanon_csize,
    __kanon_c.suppressed AS __kanon_csup,
    __kanon_run_id
FROM __kanon_classes LEFT JOIN __kanon_empty ON true
),
__kanon_src AS (
    FROM query('SELECT rowid AS __kanon_rid, NULL AS __kanon_pn, NULL AS __kanon_pi, NULL AS __kanon_pf, NULL AS __kanon_pc, * FROM '
               || __kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).tbl_sql)
),
__kanon_rows AS (
    SELECT *, __kanon_ec((SELECT r.token FROM __kanon_res), __kanon_rid) AS __kanon_ec
    FROM __kanon_src
),
-- Each COLUMNS group below also matches one padding column, because an empty COLUMNS set is an
-- error (a table may have no integer, float or categorical QI); the paddings are dropped at the end.
__kanon_out AS (
SELECT
    COLUMNS(lambda x: x = '__kanon_pn' OR (NOT list_contains(__kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).out_cols, x)
                      AND NOT starts_with(x, '__kanon_'))),
    __kanon_cls.* EXCLUDE (__kanon_cec, __kanon_csize, __kanon_csup, __kanon_run_id),
    CASE WHEN (FROM query('SELECT count(*) FROM ' || __kanon_plan(tbl, to_json({'qi': qi, 'numeric': "numeric", 'categorical': categorical})).tbl_sql))
              IS DISTINCT FROM (SELECT r.n_rows FROM __kanon_res)
         THEN error('k_anonymize: the table changed during the call (rows were deleted); run it again')
         ELSE __kanon_rows.__kanon_ec END AS ec,
    __kanon_csize AS ec_size,
    __kanon_csup AS suppressed,
    __kanon_run_id AS kanon_run
FROM __kanon_rows
JOIN __kanon_cls ON __kanon_rows.__kanon_ec = __kanon_cls.__kanon_cec
)
SELECT * EXCLUDE (__kanon_pn, __kanon_pi_min, __kanon_pi_max, __kanon_pf_min, __kanon_pf_max, __kanon_pc)
FROM __kanon_out;