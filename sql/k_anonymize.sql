-- k_anonymize(tbl, k, algo, qi, ...): anonymize a relation, one row out per row in.
--
-- tbl: a table or view ('t', 'schema.t', 'db.schema.t' of an ATTACHed database), a file path or
-- glob DuckDB reads ('x.parquet', 'dir/*.csv'), or a file reader call as a string
-- ("read_csv('x.csv', delim = ';')"); see kanon_duckdb/relation.py.
-- Output, in the relation's column order: every non-QI column unchanged; numeric QI c replaced
-- in place by c_min, c_max (NULL range = any value, the NULL policy); categorical QI c -> label of
-- the class's LCA in its taxonomy (or the chosen level for full-domain algorithms); then ec
-- (class id), ec_size, suppressed, kanon_run (kanon_runs.run_id).
-- __kanon_sql (udfs/anonymize.py) runs once, at bind time: it validates the arguments and returns
-- the statement (kanon_duckdb/output_sql.py) that runs the algorithm once and pairs each row of
-- a second read of the relation with its published values: by position for a base table
-- (positional_sql), else by (QI values, ordinal), each row handed its class's values (output_sql,
-- row_values.py); no rowid.
-- A DataFrame/Arrow object registered on the caller's connection (con.register) is read through
-- the same Python object: getvariable('__kanon_conn_id') (0: none registered) tells the UDFs whose (kanon_duckdb/registered.py).
-- TEMP tables and pre-import objects are read in the caller's own query (kanon_duckdb/caller_read.py).
-- taxonomies := {'sex': 'sex_v2'} (MAP or STRUCT) names the kanon_taxonomy tree of a QI (see
-- kanon_duckdb/taxonomy/store.py for the resolution order).
-- The algorithm parameters (/*KANON_PARAMS*/) are generated from the parameter registry
-- (kanon_duckdb/params.py) at registration; their values reach the UDF as one JSON object.
CREATE OR REPLACE MACRO k_anonymize(tbl, k := 2, algo := 'mondrian', qi := NULL, seed := 0,
        "numeric" := NULL, categorical := NULL, taxonomies := NULL, params := NULL/*KANON_PARAMS*/) AS TABLE
FROM query(__kanon_sql(tbl, to_json({'k': k, 'algo': algo, 'qi': qi, 'seed': seed,
                                      'numeric': "numeric", 'categorical': categorical,
                                      'taxonomies': taxonomies, 'params': params,
                                      'named': /*KANON_PARAM_STRUCT*/,
                                      'conn': coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT})));
