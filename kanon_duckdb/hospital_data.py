"""The ``hospital`` example: a synthetic hospital-admissions table generated deterministically.

Not real data and not derived from any: every value comes from numpy's legacy ``RandomState``
(seed 2014; its stream is fixed across numpy versions) through the distributions below, so the
table is the same on every machine. It exists to test algorithms on a shape unlike Adult's:

- 40,000 rows; 7 QIs: 2 numeric (``age`` 0-99, ``length_of_stay`` 1-60 days, skewed) and 5
  categorical, one of them wide and deep (``zip``: 600 five-digit codes under 60 three-digit
  prefixes under 6 regions, masked one digit per level, 6 levels) and one medium
  (``diagnosis``: 120 ICD-10-style codes, code -> block -> chapter -> '*');
- correlated columns (diagnosis chapter depends on age band, insurance on age, length of stay on
  admission type and chapter), zip codes clustered (a Zipf-like weight per prefix and per code),
  so neither uniform nor Adult-like;
- ``outcome`` (not a QI): the sensitive column.

Trees: ``zip`` by right-to-left masking (``taxonomy.builders.masking_edges``), ``diagnosis``
code -> block -> chapter -> '*', ``admission_type`` and ``insurance`` two-level trees, ``sex``
flat, ``age`` and ``length_of_stay`` nested intervals. Cost: about 0.1 s.
"""
from __future__ import annotations

import numpy as np

from .taxonomy import builders

ROWS = 40_000
SEED = 2014
QI = ["age", "sex", "zip", "diagnosis", "admission_type", "insurance", "length_of_stay"]
COLUMNS = QI + ["outcome"]

# ICD-10-style chapters: (chapter label, code letter, age weights for bands 0-17/18-44/45-64/65+)
_CHAPTERS = [
    ("Infectious", "A", (4, 2, 1, 1)), ("Neoplasms", "C", (1, 2, 5, 6)),
    ("Circulatory", "I", (0.5, 2, 6, 9)), ("Respiratory", "J", (6, 3, 3, 5)),
    ("Digestive", "K", (2, 4, 4, 4)), ("Musculoskeletal", "M", (1, 3, 4, 4)),
    ("Pregnancy", "O", (0.2, 8, 0.3, 0)), ("Injury", "S", (5, 6, 3, 3)),
]
_BLOCKS, _CODES_PER_BLOCK = 3, 5  # 8 chapters x 3 blocks x 5 codes = 120 codes
_ADMISSION = {"Emergency": "Unplanned", "Urgent": "Unplanned", "Elective": "Planned",
              "Newborn": "Planned"}
_INSURANCE = {"Medicare": "Public", "Medicaid": "Public", "Private": "Insured",
              "Employer": "Insured", "Self-pay": "Uninsured"}
_OUTCOMES = ["Home", "Home care", "Transfer", "Rehab", "Deceased"]
INTERVALS = {"age": [5, 10, 20, 40, 80], "length_of_stay": [2, 4, 8, 16, 32]}


def _codes():
    """[(code, block, chapter)] of the 120 diagnosis codes, chapter-major."""
    out = []
    for label, letter, _w in _CHAPTERS:
        for b in range(_BLOCKS):
            lo = b * 10
            block = f"{letter}{lo:02d}-{letter}{lo + _CODES_PER_BLOCK - 1:02d}"
            out += [(f"{letter}{lo + c:02d}", block, label) for c in range(_CODES_PER_BLOCK)]
    return out


def _zips():
    """The 600 zip codes: 60 prefixes ('100'..) x 10 codes, prefix weights Zipf-like."""
    prefixes = [f"{100 + 13 * p}" for p in range(60)]
    return [f"{p}{c:02d}" for p in prefixes for c in range(3, 93, 9)]


def rows() -> dict:
    """The table as {column: numpy array}, deterministic (see the module docstring)."""
    rng = np.random.RandomState(SEED)
    n = ROWS
    band = rng.choice(4, size=n, p=[0.15, 0.35, 0.28, 0.22])
    lo, hi = np.array([0, 18, 45, 65]), np.array([18, 45, 65, 100])
    age = lo[band] + (rng.random_sample(n) ** 1.3 * (hi[band] - lo[band])).astype(np.int64)
    sex = np.where(rng.random_sample(n) < 0.52, "F", "M")
    zips = np.array(_zips())
    w = (1.0 / np.arange(1, 61) ** 0.8).repeat(10) * np.tile(1.0 / np.arange(1, 11) ** 0.5, 60)
    zip_code = zips[rng.choice(zips.size, size=n, p=w / w.sum())]
    codes = _codes()
    chapter_w = np.array([c[2] for c in _CHAPTERS], dtype=float)  # (8, 4)
    diag = np.empty(n, dtype=object)
    chapter = np.empty(n, dtype=np.int64)
    for b in range(4):
        rows_b = np.flatnonzero(band == b)
        p = chapter_w[:, b] / chapter_w[:, b].sum()
        ch = rng.choice(len(_CHAPTERS), size=rows_b.size, p=p)
        chapter[rows_b] = ch
        within = rng.zipf(1.6, size=rows_b.size) % (_BLOCKS * _CODES_PER_BLOCK)
        diag[rows_b] = [codes[c * _BLOCKS * _CODES_PER_BLOCK + i][0] for c, i in zip(ch, within)]
    # a pregnancy code for a man or a child is redrawn from injuries
    bad = (chapter == 6) & ((sex == "M") | (age < 14))
    diag[bad] = [codes[7 * _BLOCKS * _CODES_PER_BLOCK + i][0]
                 for i in rng.randint(0, _BLOCKS * _CODES_PER_BLOCK, size=int(bad.sum()))]
    chapter[bad] = 7
    adm = np.array(list(_ADMISSION))[rng.choice(4, size=n, p=[0.45, 0.2, 0.3, 0.05])]
    adm[age > 0] = np.where(adm[age > 0] == "Newborn", "Elective", adm[age > 0])
    adm[(age == 0) & (rng.random_sample(n) < 0.7)] = "Newborn"
    ins = np.array(list(_INSURANCE))
    p_ins = np.where((age >= 65)[:, None], [[0.75, 0.05, 0.1, 0.05, 0.05]],
                     [[0.02, 0.2, 0.3, 0.38, 0.1]])
    insurance = ins[(rng.random_sample(n)[:, None] > np.cumsum(p_ins, axis=1)).sum(axis=1)]
    mean_stay = 2.0 + 3.0 * (adm == "Emergency") + 2.0 * np.isin(chapter, [1, 2]) + age / 40.0
    stay = np.minimum(60, rng.geometric(1.0 / mean_stay))  # >= 1 day
    p_out = np.where((age >= 75)[:, None], [[0.45, 0.2, 0.1, 0.15, 0.1]],
                     [[0.8, 0.08, 0.05, 0.05, 0.02]])
    outcome = np.array(_OUTCOMES)[(rng.random_sample(n)[:, None]
                                   > np.cumsum(p_out, axis=1)).sum(axis=1)]
    return {"age": age.astype(np.int32), "sex": sex, "zip": zip_code, "diagnosis": diag.astype(str),
            "admission_type": adm, "insurance": insurance,
            "length_of_stay": stay.astype(np.int32), "outcome": outcome}


def taxonomy_edges(table: dict) -> list:
    """[(attr, child, parent)] of every column's tree, in insertion order."""
    edges = []
    edges += [("sex", v, "*") for v in ("F", "M")] + [("sex", "*", None)]
    edges += [("zip", c, p) for c, p in builders.masking_edges(_zips(), attr="zip")]
    seen = []
    for code, block, chapter in _codes():
        if chapter not in seen:
            seen.append(chapter)
            edges.append(("diagnosis", chapter, "*"))
        if block not in seen:
            seen.append(block)
            edges.append(("diagnosis", block, chapter))
        edges.append(("diagnosis", code, block))
    edges.append(("diagnosis", "*", None))
    for attr, tree in (("admission_type", _ADMISSION), ("insurance", _INSURANCE)):
        for group in dict.fromkeys(tree.values()):
            edges.append((attr, group, "*"))
            edges += [(attr, v, group) for v, g in tree.items() if g == group]
        edges.append((attr, "*", None))
    edges += [("outcome", v, "*") for v in _OUTCOMES] + [("outcome", "*", None)]
    for attr, widths in INTERVALS.items():
        values = sorted({int(v) for v in table[attr]})
        edges += [(attr, c, p) for c, p in builders.interval_edges(values, widths, attr=attr)]
    return edges
