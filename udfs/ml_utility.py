"""Arrow UDF behind the ``classification_utility`` table macro (sql/ml_utility.sql).

``__kanon_ml(raw_tbl, anon_tbl, label, models, seed, test_fraction, qi, encoding, features)`` runs once
(side effects: it trains models) and returns one LIST of per-model STRUCTs, which the macro
unnests. It reads both relations (any ``relation.resolve_source`` takes) through a cursor of the
caller's database that also sees the objects registered on the caller, the connection or cursor
with id ``caller`` (``registered.CallerConnection``); TEMP tables are not visible. scikit-learn is imported only when it is called: the function is registered even
without the ``[ml]`` extra and then fails with "install kanon-duckdb[ml]".
"""
from __future__ import annotations

import pyarrow as pa

from kanon_duckdb.udf_spec import UDF, UdfContext, first_value

ML_TYPE = ("STRUCT(model VARCHAR, accuracy_anon DOUBLE, f1_anon DOUBLE, accuracy_raw DOUBLE, "
           "f1_raw DOUBLE, n_train BIGINT, n_test BIGINT, split VARCHAR)[]")
_ARROW_TYPE = pa.list_(pa.struct([
    ("model", pa.string()), ("accuracy_anon", pa.float64()), ("f1_anon", pa.float64()),
    ("accuracy_raw", pa.float64()), ("f1_raw", pa.float64()), ("n_train", pa.int64()),
    ("n_test", pa.int64()), ("split", pa.string())]))


def declare(ctx: UdfContext) -> list[UDF]:
    """``__kanon_ml`` on ``ctx.con``."""
    con = ctx.con

    def kanon_ml(raw_tbl, anon_tbl, label, models, seed, test_fraction, qi, encoding, features,
                 caller):
        # imported on first use
        from kanon_duckdb.ml_utility import RESULT_FIELDS, classification_utility
        from kanon_duckdb.registered import CallerConnection
        cur = CallerConnection(con, first_value(caller)).cursor()
        try:
            fraction = first_value(test_fraction)
            rows = classification_utility(
                cur, first_value(raw_tbl), first_value(anon_tbl), first_value(label),
                models=first_value(models), seed=first_value(seed) or 0,
                test_fraction=0.3 if fraction is None else fraction, qi=first_value(qi),
                encoding=first_value(encoding) or "ordinal",
                features=first_value(features) or "qi")
        finally:
            cur.close()
        value = [{f: r[f] for f in RESULT_FIELDS} for r in rows]
        return pa.array([value] * len(raw_tbl), type=_ARROW_TYPE)

    return [UDF("__kanon_ml", kanon_ml,
                ("VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR[]", "BIGINT", "DOUBLE", "VARCHAR[]",
                 "VARCHAR", "VARCHAR", "UBIGINT"), ML_TYPE, side_effects=True)]
