-- The macros behind k_anonymize on a relation read in the caller's query (a TEMP table, a table of
-- the caller's open transaction: kanon_duckdb/caller_read.py). DuckDB picks a macro overload by
-- the type of its argument, so the shape of a QI's output follows its type at bind time:
-- numbers (encoding._INT_TYPES, _FLOAT_TYPES, DECIMAL) publish bounds, anything else a label.
-- tests/test_caller_read.py holds these type lists equal to kanon_duckdb/encoding.py's.

-- The bound of a QI: __kanon_bound(v, w, i, l, f), v and w the QI's value (w untyped: a typed
-- DECIMAL parameter is DuckDB's DECIMAL(18,3), w keeps the column's precision and scale), is i
-- (the run's BIGINT bound) as v's type when v has an integer type, f (DOUBLE) as FLOAT for a
-- FLOAT v, i read as the unscaled integer of a DECIMAL v (value * 10^scale,
-- kanon_duckdb/decimals.py; for a DECIMAL(p > 18) i * 2^64 + l, l the low half,
-- published.split_unscaled, NULL for any other QI) as w's DECIMAL(p, s), exactly, through its
-- text, else f: published.bound_type's rule.
CREATE OR REPLACE MACRO __kanon_padded(a, sc) AS lpad(a, greatest(len(a), sc + 1)::INTEGER, '0');
CREATE OR REPLACE MACRO __kanon_point(p, sc) AS
    left(p, len(p) - sc) || CASE WHEN sc > 0 THEN '.' || right(p, sc) ELSE '' END;
CREATE OR REPLACE MACRO __kanon_unscaled_text(i, sc) AS
    CASE WHEN i < 0 THEN '-' ELSE '' END
    || __kanon_point(__kanon_padded(abs(i::HUGEINT)::VARCHAR, sc), sc);
CREATE OR REPLACE MACRO __kanon_bound(v, w, i, l, f) AS f,
    (v TINYINT, w, i, l, f) AS cast_to_type(i, v), (v SMALLINT, w, i, l, f) AS cast_to_type(i, v),
    (v INTEGER, w, i, l, f) AS cast_to_type(i, v), (v BIGINT, w, i, l, f) AS i,
    (v HUGEINT, w, i, l, f) AS cast_to_type(i, v), (v UTINYINT, w, i, l, f) AS cast_to_type(i, v),
    (v USMALLINT, w, i, l, f) AS cast_to_type(i, v), (v UINTEGER, w, i, l, f) AS cast_to_type(i, v),
    (v UBIGINT, w, i, l, f) AS cast_to_type(i, v), (v UHUGEINT, w, i, l, f) AS cast_to_type(i, v),
    (v FLOAT, w, i, l, f) AS cast_to_type(f, v), (v DOUBLE, w, i, l, f) AS f,
    (v DECIMAL, w, i, l, f) AS cast_to_type(__kanon_unscaled_text(
        CASE WHEN l IS NULL THEN i::HUGEINT ELSE i::HUGEINT * 18446744073709551616 + l END,
        regexp_extract(typeof(w), ',\s*(\d+)\)', 1)::INTEGER), w);

-- The label of a QI: __kanon_label(v, label) is the label (v only names the output column,
-- COLUMNS(...) AS '\0').
CREATE OR REPLACE MACRO __kanon_label(v, label) AS label;

-- A column of the row key: v, or its text for an INTERVAL, whose DuckDB hash collides on
-- ordinary values (0 and 31 days); encoding.row_key_sql's rule, picked here by the type.
CREATE OR REPLACE MACRO __kanon_key(v) AS v, (v INTERVAL) AS CAST(v AS VARCHAR);

-- The cell of a QI: __kanon_cell(v, lo, hi, label) is STRUCT(lo, hi) when v is a number, else
-- STRUCT(label); the fields are named after the columns passed (c_min, c_max / c). BIGNUM,
-- which DuckDB would cast to DOUBLE, is categorical, as in encoding.plan_qis.
CREATE OR REPLACE MACRO __kanon_cell(v, lo, hi, label) AS struct_pack(label),
    (v BIGNUM, lo, hi, label) AS struct_pack(label),
    (v TINYINT, lo, hi, label) AS struct_pack(lo, hi),
    (v SMALLINT, lo, hi, label) AS struct_pack(lo, hi),
    (v INTEGER, lo, hi, label) AS struct_pack(lo, hi),
    (v BIGINT, lo, hi, label) AS struct_pack(lo, hi),
    (v HUGEINT, lo, hi, label) AS struct_pack(lo, hi),
    (v UTINYINT, lo, hi, label) AS struct_pack(lo, hi),
    (v USMALLINT, lo, hi, label) AS struct_pack(lo, hi),
    (v UINTEGER, lo, hi, label) AS struct_pack(lo, hi),
    (v UBIGINT, lo, hi, label) AS struct_pack(lo, hi),
    (v UHUGEINT, lo, hi, label) AS struct_pack(lo, hi),
    (v FLOAT, lo, hi, label) AS struct_pack(lo, hi),
    (v DOUBLE, lo, hi, label) AS struct_pack(lo, hi),
    (v DECIMAL, lo, hi, label) AS struct_pack(lo, hi);

-- The cell of a QI named in numeric := (__kanon_cell_num) or categorical := (__kanon_cell_cat).
CREATE OR REPLACE MACRO __kanon_cell_num(v, lo, hi, label) AS struct_pack(lo, hi);
CREATE OR REPLACE MACRO __kanon_cell_cat(v, lo, hi, label) AS struct_pack(label);
