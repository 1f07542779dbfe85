-- Optional and named arguments of the taxonomy builders (udfs/taxonomy.py): Python UDFs cannot be
-- overloaded, so each builder is a TEMP macro over an internal UDF that takes every argument
-- (NULL = the default).
CREATE OR REPLACE TEMP MACRO kanon_build_intervals(tbl, col, widths := NULL, attr := NULL)
    AS __kanon_build_intervals(tbl, col, widths::DOUBLE[], attr::VARCHAR);
CREATE OR REPLACE TEMP MACRO kanon_build_quantiles(tbl, col, bins := NULL, attr := NULL)
    AS __kanon_build_quantiles(tbl, col, bins::BIGINT, attr::VARCHAR);
CREATE OR REPLACE TEMP MACRO kanon_build_masking(tbl, col, attr := NULL)
    AS __kanon_build_masking(tbl, col, attr::VARCHAR);
CREATE OR REPLACE TEMP MACRO kanon_build_dates(tbl, col, attr := NULL)
    AS __kanon_build_dates(tbl, col, attr::VARCHAR);
CREATE OR REPLACE TEMP MACRO kanon_build_flat(tbl, col, attr := NULL)
    AS __kanon_build_flat(tbl, col, attr::VARCHAR);
CREATE OR REPLACE TEMP MACRO kanon_check_taxonomy(tbl, col, attr := NULL)
    AS __kanon_check_taxonomy(tbl, col, attr::VARCHAR);
