-- Optional and named arguments of the taxonomy builders (udfs/taxonomy.py): Python UDFs cannot be
-- overloaded, so each builder is a TEMP macro over an internal UDF that takes every argument
-- (NULL = the default). Each writes the rows of its tree into kanon_taxonomy under `attr` (default:
-- the column name; 'tbl.col' for one table's column, any name for a tree picked with
-- k_anonymize(..., taxonomies := {...})) and returns the number of edges written. The last
-- argument names the statement: when a builder fails, the earlier builders of the same statement
-- are undone (udfs/taxonomy.StatementUndo), so a multi-builder SELECT is all-or-nothing.

-- kanon_load_arx(attr, path): load an ARX hierarchy CSV (';'-separated, one row per leaf, levels
-- leaf -> '*') as the tree `attr`; ARX's levels are kept (a label repeated in a row stays a level).
CREATE OR REPLACE TEMP MACRO kanon_load_arx(attr, path) AS __kanon_load_arx(attr, path,
    current_connection_id()::VARCHAR || ':' || current_query_id()::VARCHAR);

-- kanon_build_intervals(tbl, col, widths := NULL, attr := NULL): nested numeric intervals of a
-- column (widths such as [5, 10, 20], each a multiple of the previous; default: chosen from the data).
CREATE OR REPLACE TEMP MACRO kanon_build_intervals(tbl, col, widths := NULL, attr := NULL)
    AS __kanon_build_intervals(tbl, col, widths::DOUBLE[], attr::VARCHAR,
        current_connection_id()::VARCHAR || ':' || current_query_id()::VARCHAR);
-- kanon_build_quantiles(tbl, col, bins := NULL, attr := NULL): nested equal-frequency intervals
-- of a numeric column (bins at the finest level, default 16).
CREATE OR REPLACE TEMP MACRO kanon_build_quantiles(tbl, col, bins := NULL, attr := NULL)
    AS __kanon_build_quantiles(tbl, col, bins::BIGINT, attr::VARCHAR,
        current_connection_id()::VARCHAR || ':' || current_query_id()::VARCHAR);
-- kanon_build_masking(tbl, col, attr := NULL): masking tree of a code column
-- ('80015' -> '8001*' -> ... -> '*****').
CREATE OR REPLACE TEMP MACRO kanon_build_masking(tbl, col, attr := NULL)
    AS __kanon_build_masking(tbl, col, attr::VARCHAR,
        current_connection_id()::VARCHAR || ':' || current_query_id()::VARCHAR);
-- kanon_build_dates(tbl, col, attr := NULL): date tree of a DATE/TIMESTAMP column (day -> month ->
-- year -> '*').
CREATE OR REPLACE TEMP MACRO kanon_build_dates(tbl, col, attr := NULL)
    AS __kanon_build_dates(tbl, col, attr::VARCHAR,
        current_connection_id()::VARCHAR || ':' || current_query_id()::VARCHAR);
-- kanon_build_flat(tbl, col, attr := NULL): flat tree of a column (every distinct value -> '*').
CREATE OR REPLACE TEMP MACRO kanon_build_flat(tbl, col, attr := NULL)
    AS __kanon_build_flat(tbl, col, attr::VARCHAR,
        current_connection_id()::VARCHAR || ':' || current_query_id()::VARCHAR);
-- kanon_check_taxonomy(tbl, col, attr := NULL): 'ok' when every value of the column is a leaf of
-- its tree (default: the tree k_anonymize would use), else an error listing the missing values.
CREATE OR REPLACE TEMP MACRO kanon_check_taxonomy(tbl, col, attr := NULL)
    AS __kanon_check_taxonomy(tbl, col, attr::VARCHAR);

-- The tree of a column of a table, told which connection asks (as udfs/metrics.py's look-ups:
-- getvariable('__kanon_conn_id') is set by registering an object; NULL means the connection
-- the functions were declared on).
CREATE OR REPLACE MACRO __kanon_tree_attr(tbl, col) AS
    __kanon_tree_attr_in(tbl, col, getvariable('__kanon_conn_id'));
