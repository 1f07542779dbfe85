"""Integer QIs are read as INTEGER when their type fits it, as BIGINT otherwise: the encoded
coordinates, NULL flags and extremes are those of the same values read as BIGINT."""
import numpy as np

import kanon_duckdb
from kanon_duckdb import encoding

# per type: its extremes, some values between and NULLs
TYPES = {"TINYINT": (-128, 127), "SMALLINT": (-32768, 32767), "INTEGER": (-2**31, 2**31 - 1),
         "UTINYINT": (0, 255), "USMALLINT": (0, 65535), "UINTEGER": (0, 2**32 - 1),
         "BIGINT": (-2**63, 2**63 - 1)}


def test_every_integer_type_encodes_as_its_bigint_values():
    con = kanon_duckdb.connect()
    cols = []
    for i, (typ, (lo, hi)) in enumerate(TYPES.items()):
        mid = (lo + hi) // 2
        cols.append(f"CASE WHEN r % 7 = 3 THEN NULL WHEN r % 5 = 0 THEN {lo} WHEN r % 5 = 1 "
                    f"THEN {hi} ELSE {mid} + (r * {i + 3}) % 50 END::{typ} AS c{i}")
    con.execute(f"CREATE TABLE t AS SELECT {', '.join(cols)} FROM range(300) t(r)")
    con.execute("CREATE TABLE b AS SELECT " + ", ".join(
        f"c{i}::{'HUGEINT' if typ == 'BIGINT' else 'BIGINT'} AS c{i}"
        for i, typ in enumerate(TYPES)) + " FROM t")
    qi = [f"c{i}" for i in range(len(TYPES))]
    plan_t, plan_b = encoding.plan_qis(con, "t", qi), encoding.plan_qis(con, "b", qi)
    assert [encoding._travel_type(plan_t, c) for c in qi] == ["INTEGER"] * 5 + ["BIGINT"] * 2
    _, narrow = encoding.encode(con, plan_t)
    _, wide = encoding.encode(con, plan_b)
    np.testing.assert_array_equal(narrow.num, wide.num)
    np.testing.assert_array_equal(narrow.num_null, wide.num_null)
    assert narrow.num_null.sum(axis=0).tolist() == [43] * len(TYPES)  # r % 7 == 3
    np.testing.assert_array_equal(narrow.num_lo, wide.num_lo)
    np.testing.assert_array_equal(narrow.num_hi, wide.num_hi)
    for j, (lo, hi) in enumerate(TYPES.values()):
        assert narrow.value_range(j) == (float(lo), float(hi))
        ints, null = (narrow.codec(j).decode_int(narrow.num[:, j]) if narrow.codec(j) else
                      (narrow.num[:, j].astype(np.int64), narrow.num_null[:, j]))
        got = con.execute(f"SELECT c{j}::HUGEINT FROM t").fetchall()
        assert [None if m else int(v) for v, m in zip(ints, null | narrow.num_null[:, j])] == \
            [r[0] for r in got]
