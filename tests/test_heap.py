"""heap.release_freed: a large run's freed memory goes back to the OS before the statement
writes its output (issue 14 item 1, peak RSS), and only for large runs."""
from __future__ import annotations

import numpy as np
import pytest

import kanon_duckdb
from kanon_duckdb import heap


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def test_only_runs_of_trim_rows_or_more_trim(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_trim", calls.append)
    assert not heap.release_freed(heap.TRIM_ROWS - 1)
    assert calls == []
    assert heap.release_freed(heap.TRIM_ROWS)
    assert calls == [0]
    monkeypatch.setattr(heap, "_trim", None)  # no malloc_trim (macOS, Windows, musl)
    assert not heap.release_freed(10**9)


@pytest.mark.skipif(heap._malloc_trim() is None, reason="glibc's malloc_trim only")
def test_freed_heap_blocks_leave_the_process():
    # 2000 blocks of 64 KB (below glibc's mmap threshold: from the heap), every tenth kept
    # alive, so the freed ones lie between live blocks and free() cannot return them
    blocks = [np.ones(8000) for _ in range(2000)]
    keep = blocks[::10]
    del blocks
    held = _rss_mb()
    assert not heap.release_freed(heap.TRIM_ROWS - 1)
    assert _rss_mb() > held - 20  # below the threshold nothing is returned
    assert heap.release_freed(heap.TRIM_ROWS)
    assert _rss_mb() < held - 80  # about 110 of the 125 MB freed leave the process
    assert sum(float(b[0]) for b in keep) == len(keep)


def test_a_statement_releases_after_its_run(monkeypatch):
    # both ways of publishing call it once per run, with the run's row count
    calls = []
    monkeypatch.setattr(heap, "release_freed", lambda n: calls.append(n))
    con = kanon_duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i AS id, i % 37 AS a, i % 11 AS b FROM range(500) r(i)")
    con.execute("CREATE VIEW v AS FROM t")
    for name in ("t", "v"):  # a base table pairs by position, a view joins the class table
        rows = con.sql(f"SELECT count(*), min(ec_size) FROM k_anonymize('{name}', k := 5, "
                       "qi := ['a', 'b'])").fetchall()
        assert rows[0][0] == 500 and rows[0][1] >= 5
    assert calls == [500, 500]
    con.close()
