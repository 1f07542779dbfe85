-- A name the reader cursor resolved to a regular table must not be read when a TEMP table or
-- view of the calling connection shadows it: DuckDB reads the TEMP one in the caller's query, the
-- UDFs (through a cursor: kanon_duckdb/relation.py) the regular one. Only the caller's query sees
-- its TEMP catalog, so the check runs there. (No line starts with a macro's name: these are
-- private, kanon_help lists none of them.)

-- The check, __kanon_temp_check(c): true, or error(c['msg']) when the calling connection holds a
-- TEMP table or view named c['s'].c['n'] (lowercase; c NULL: nothing to check); c is
-- relation.shadow_check's answer. One scan of the catalog listings.
CREATE OR REPLACE MACRO __kanon_temp_check(c) AS
    CASE WHEN EXISTS (SELECT 1 FROM duckdb_tables()
                      WHERE database_name = 'temp' AND lower(schema_name) = c['s']
                            AND lower(table_name) = c['n']
                      UNION ALL
                      SELECT 1 FROM duckdb_views()
                      WHERE database_name = 'temp' AND lower(schema_name) = c['s']
                            AND lower(view_name) = c['n'])
         THEN error(c['msg']) ELSE true END;

-- The check of a name, __kanon_unshadowed(tbl, conn): the check for the relation name tbl as the
-- connection with id conn resolves it (udfs/metrics.py: __kanon_shadow_in, folded at bind time;
-- NULL for a registered object, a file, a three-part name).
CREATE OR REPLACE MACRO __kanon_unshadowed(tbl, conn) AS
    __kanon_temp_check(__kanon_shadow_in(tbl, conn::BIGINT));

-- What the metric and check macros read, __kanon_read(tbl): query_table(tbl) after the check (the
-- caller named as in their COLUMNS lambdas: kanon_duckdb/registered.py).
CREATE OR REPLACE MACRO __kanon_read(tbl) AS TABLE
    FROM query_table(tbl)
    WHERE __kanon_unshadowed(tbl, getvariable('__kanon_conn_id'));
