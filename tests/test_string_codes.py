"""StringCodes (the text QIs' dictionary codes, read from Arrow buffers) against a Python dict."""
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from kanon_duckdb import string_codes
from kanon_duckdb.string_codes import StringCodes

# short and long values, values equal up to a trailing NUL (same packed word, other length),
# multi-byte UTF-8, the empty string and NULL
_VALUES = st.one_of(st.none(), st.sampled_from(["", "a", "a\x00", "\x00", "ab", "abcdefgh",
                                                  "abcdefgh\x00", "abcdefghi", "ü", "üü", "日本"]),
                    st.text(max_size=20))


def _reference(labels, batches, weights=None):
    """codes (NULL -> None), values by code and per-code counts from a plain dict."""
    index = {v: i for i, v in enumerate(labels)}
    counts = [0] * len(labels)
    codes, nulls, r = [], 0, 0
    for batch in batches:
        for v in batch:
            w = 1 if weights is None else int(weights[r])
            r += 1
            if v is None:
                codes.append(None)
                nulls += w
                continue
            if v not in index:
                index[v] = len(index)
                counts.append(0)
            codes.append(index[v])
            counts[index[v]] += w
    return codes, list(index), counts, nulls


@settings(max_examples=100, deadline=None)
@given(values=st.lists(_VALUES, max_size=300), labels=st.lists(st.text(max_size=10), unique=True,
                                                               max_size=20),
       cuts=st.lists(st.integers(0, 300), max_size=4), weighted=st.booleans(),
       text_type=st.sampled_from(["string", "large_string", "string_view"]), lead=st.integers(0, 3),
       by_dictionary=st.booleans())
def test_codes_equal_a_dict_in_order_of_first_appearance(values, labels, cuts, weighted,
                                                        text_type, lead, by_dictionary):
    # by_dictionary: every unweighted batch goes through Arrow's dictionary encoding
    # (StringCodes._encode_by_dictionary), as long values of large batches do
    with pytest.MonkeyPatch.context() as mp:
        if by_dictionary:
            mp.setattr(string_codes, "DICT_ROWS", 0)
            mp.setattr(StringCodes, "_long_values", staticmethod(lambda arr: True))
        _check_against_a_dict(values, labels, cuts, weighted, text_type, lead)


def _check_against_a_dict(values, labels, cuts, weighted, text_type, lead):
    cuts = sorted({min(c, len(values)) for c in cuts} | {0, len(values)})
    typ = {"string": pa.string(), "large_string": pa.large_string(),
           "string_view": pa.string_view()}[text_type]
    # a sliced array (non-zero offset into its buffers, validity bits not byte-aligned)
    whole = pa.array(["pad"] * lead + values, type=typ).slice(lead)
    weights = np.arange(1, len(values) + 1, dtype=np.int64) if weighted else None
    coder = StringCodes(labels)
    out = np.full(len(values), -7, dtype=np.int32)
    for a, b in zip(cuts[:-1], cuts[1:]):
        coder.encode(whole.slice(a, b - a), out[a:b], null_code=-1,
                     weights=None if weights is None else weights[a:b])
    codes, ref_values, ref_counts, nulls = _reference(
        labels, [values[a:b] for a, b in zip(cuts[:-1], cuts[1:])], weights)
    assert out.tolist() == [-1 if c is None else c for c in codes]
    assert coder.values() == ref_values
    assert coder.counts().tolist() == ref_counts
    assert coder.null_count == nulls


def test_many_distinct_values_grow_the_table_and_keep_their_codes():
    values = [f"value-{i % 5000}" if i % 3 else f"v{i % 700}" for i in range(40_000)]
    coder = StringCodes(["v5", "value-1"])
    out = np.empty(len(values), dtype=np.int32)
    arr = pa.array(values)
    for a in range(0, len(values), 9_999):
        coder.encode(arr.slice(a, 9_999), out[a:a + 9_999])
    _, ref_values, ref_counts, _ = _reference(["v5", "value-1"], [values])
    assert coder.values() == ref_values and coder.counts().tolist() == ref_counts
    assert np.array_equal(np.array(ref_values, dtype=object)[out], np.array(values, dtype=object))


def test_a_strided_output_column_and_the_null_code():
    out = np.full((4, 3), 9, dtype=np.int32)
    coder = StringCodes(["x"])
    coder.encode(pa.array(["y", None, "x", "y"]), out[:, 1], null_code=1)
    assert out[:, 1].tolist() == [1, 1, 0, 1] and (out[:, [0, 2]] == 9).all()
    assert coder.values() == ["x", "y"] and coder.counts().tolist() == [1, 2]


def test_bad_labels_and_lengths_are_refused():
    with pytest.raises(ValueError, match="distinct strings"):
        StringCodes(["a", "a"])
    with pytest.raises(ValueError, match="3 rows but out holds 2"):
        StringCodes().encode(pa.array(["a", "b", "c"]), np.empty(2, dtype=np.int32))


def test_long_values_of_a_large_batch_take_the_dictionary_path(monkeypatch):
    # Adult-like: 5,000 rows of 7 values longer than a word, some NULL, after labels
    values = [None if i % 97 == 0 else f"value-number-{i * 7 % 11 % 7}" for i in range(5000)]
    labels = ["value-number-3", "other"]
    taken = []
    real = StringCodes._encode_by_dictionary
    monkeypatch.setattr(StringCodes, "_encode_by_dictionary",
                        lambda self, *a: (taken.append(1), real(self, *a))[1])
    coder = StringCodes(labels)
    out = np.empty(len(values), dtype=np.int32)
    coder.encode(pa.array(values, pa.string()), out, null_code=99)
    assert taken == [1]
    codes, ref_values, ref_counts, nulls = _reference(labels, [values])
    assert out.tolist() == [99 if c is None else c for c in codes]
    assert coder.values() == ref_values and coder.counts().tolist() == ref_counts
    assert coder.null_count == nulls == 52
