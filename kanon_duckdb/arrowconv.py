"""numpy <-> Arrow for the ``k_anonymize`` path, straight through buffers.

pyarrow's ``pa.array``, ``pa.scalar``, ``Array.to_numpy`` and ``np.asarray(array)`` first ask
its pandas shim whether the object is a pandas type, which imports pandas (0.2-0.4 s) on the
first such call of a process although no pandas object is involved. The path of a statement
(encoding the rows, the UDFs' results) only moves flat fixed-width and string arrays, which
these functions build and read from buffers: the same arrays, without importing pandas.
Each is O(n) (zero-copy where the layouts agree).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyarrow._compute import CastOptions, call_function

_NUMPY_OF = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32,
             pa.int64(): np.int64, pa.uint8(): np.uint8, pa.uint16(): np.uint16,
             pa.uint32(): np.uint32, pa.uint64(): np.uint64, pa.float32(): np.float32,
             pa.float64(): np.float64}


def _bits(buf, offset: int, n: int) -> np.ndarray:
    """bool (n,) of a little-endian bitmap from bit ``offset``."""
    raw = np.frombuffer(buf, dtype=np.uint8)
    return np.unpackbits(raw, count=offset + n, bitorder="little")[offset:].astype(bool)


def validity(arr: pa.Array) -> np.ndarray:
    """bool (n,): True where ``arr`` (an Array or ChunkedArray) holds a value."""
    arr = _one_chunk(arr)
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return _bits(arr.buffers()[0], arr.offset, len(arr))


def to_numpy(arr) -> np.ndarray:
    """Values of a fixed-width numeric or boolean Array/ChunkedArray as numpy, as pyarrow's
    ``to_numpy(zero_copy_only=False)`` gives them to numba (same writability, so the same
    kernel specializations): numeric without NULLs, a read-only zero-copy view; with NULLs, a
    writable copy holding NaN (floats) or 0 (integers) there; booleans, a writable copy."""
    arr = _one_chunk(arr)
    n = len(arr)
    if pa.types.is_boolean(arr.type):
        return _bits(arr.buffers()[1], arr.offset, n) if n else np.zeros(0, dtype=bool)
    dtype = _NUMPY_OF.get(arr.type)
    if dtype is None:
        raise TypeError(f"arrowconv.to_numpy: unsupported Arrow type {arr.type}")
    buf = arr.buffers()[1]
    if buf is None or n == 0:
        values = np.zeros(n, dtype=dtype)
        values.flags.writeable = False
        return values
    values = np.frombuffer(buf, dtype=dtype)[arr.offset:arr.offset + n]
    if arr.null_count:
        values = values.copy()
        values[~validity(arr)] = np.nan if values.dtype.kind == "f" else 0
    else:
        values.flags.writeable = False  # Arrow's memory is immutable
    return values


def filled(arr, value) -> np.ndarray:
    """Numeric values of ``arr`` with each NULL replaced by ``value``, read-only (as pyarrow's
    ``fill_null(value).to_numpy()``, whose scalar conversion would import pandas)."""
    values = to_numpy(arr)
    if _one_chunk(arr).null_count:
        values[~validity(arr)] = value
        values.flags.writeable = False
    return values


def from_numpy(values, type: pa.DataType = None, mask=None) -> pa.Array:
    """An Arrow array of the 1-D numeric or boolean ``values`` (cast to ``type`` when given);
    ``mask`` True marks NULL slots."""
    values = np.asarray(values)
    if type is None:
        type = pa.bool_() if values.dtype == bool else pa.from_numpy_dtype(values.dtype)
    n = values.shape[0]
    if pa.types.is_boolean(type):
        data = pa.py_buffer(np.packbits(values.astype(bool), bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values, dtype=_NUMPY_OF[type]))
    return pa.Array.from_buffers(type, n, [_validity_buffer(mask), data])


def strings(values) -> pa.Array:
    """A ``string`` array of the Python ``values`` (str, or None for NULL)."""
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    if offsets[-1] < 2**31:
        typ, offsets = pa.string(), offsets.astype(np.int32)
    else:
        typ = pa.large_string()
    mask = np.fromiter((v is None for v in values), dtype=bool, count=len(encoded))
    arr = pa.Array.from_buffers(typ, len(encoded), [_validity_buffer(mask), pa.py_buffer(offsets),
                                                     pa.py_buffer(b"".join(encoded))])
    return arr if typ == pa.string() else arr.cast(pa.string())


def repeat_string(text: str, n: int) -> pa.Array:
    """A ``string`` array holding ``text`` ``n`` times."""
    b = text.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int64) * len(b)
    typ = pa.string() if offsets[-1] < 2**31 else pa.large_string()
    arr = pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets.astype(
        np.int32 if typ == pa.string() else np.int64)), pa.py_buffer(b * n)])
    return arr if typ == pa.string() else arr.cast(pa.string())


def dictionary_encode(arr) -> pa.DictionaryArray:
    """``pyarrow.compute.dictionary_encode(arr)`` (NULLs stay NULL indices) through the compute
    kernel registry itself: importing ``pyarrow.compute`` builds a Python wrapper and docstring
    for each of its ~290 functions, 0.05-0.08 s of a first call. O(n)."""
    return call_function("dictionary_encode", [arr])


def cast(arr, target: pa.DataType):
    """``arr.cast(target)`` (safe), without importing ``pyarrow.compute`` (see
    :func:`dictionary_encode`)."""
    return call_function("cast", [arr], CastOptions.safe(target))


def take(arr, indices):
    """``arr.take(indices)``, without importing ``pyarrow.compute``."""
    return call_function("take", [arr, indices])


def _validity_buffer(mask):
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return None
    return pa.py_buffer(np.packbits(~mask, bitorder="little"))


def _one_chunk(arr):
    if isinstance(arr, pa.ChunkedArray):
        return arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    return arr
