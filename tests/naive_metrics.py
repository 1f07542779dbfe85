"""Brute-force Python references for the SQL metrics (sql/metrics_*.sql, sql/privacy.sql).

Straight from the definitions in DESIGN.md, row by row, with no shared code with the macros.
``load(con, tbl)`` fetches the anonymized table, its kanon_runs row and the taxonomy edges.
"""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from fractions import Fraction


class Tree:
    """A taxonomy from (child, parent) edges: leaves, depth, subtree height per node."""

    def __init__(self, edges):
        self.parent = {}
        children = defaultdict(list)
        nodes = set()
        for c, p in edges:
            nodes.add(c)
            if p is not None:
                nodes.add(p)
                self.parent[c] = p
                if c not in children[p]:
                    children[p].append(c)
        self.root = next(n for n in nodes if n not in self.parent)
        self.children = children
        self.nodes = nodes

    def leaves(self, u):
        ch = self.children.get(u)
        return 1 if not ch else sum(self.leaves(c) for c in ch)

    def sub_height(self, u):
        ch = self.children.get(u)
        return 0 if not ch else 1 + max(self.sub_height(c) for c in ch)

    def depth(self, u):
        d = 0
        while u in self.parent:
            u = self.parent[u]
            d += 1
        return d


def load(con, tbl):
    cur = con.cursor()
    rel = cur.sql(f'SELECT * FROM "{tbl}"')
    cols = rel.columns
    rows = [dict(zip(cols, r)) for r in rel.fetchall()]
    run_id = rows[0]["kanon_run"]
    rc = cur.execute("SELECT * FROM kanon_runs WHERE run_id = ?", [run_id])
    names = [d[0] for d in rc.description]
    run = dict(zip(names, rc.fetchall()[0]))
    edges = defaultdict(list)
    for a, c, p in cur.execute("SELECT attr, child, parent FROM kanon_taxonomy").fetchall():
        edges[a].append((c, p))
    cur.close()
    trees = {a: Tree(e) for a, e in edges.items()}
    return rows, run, trees


def _num_range(rows, run, q):
    """The data's global range recorded by the run, else the finite published range."""
    nums = list(run.get("numeric_qi") or [])
    if run.get("num_lo") and q in nums and run["num_lo"][nums.index(q)] is not None:
        i = nums.index(q)
        return run["num_lo"][i], run["num_hi"][i]
    los = [r[f"{q}_min"] for r in rows if r[f"{q}_min"] is not None and math.isfinite(r[f"{q}_min"])]
    his = [r[f"{q}_max"] for r in rows if r[f"{q}_max"] is not None and math.isfinite(r[f"{q}_max"])]
    return (min(los), max(his)) if los else (None, None)


def ncp(rows, run, trees, row, q, kind, height=False):
    if row["suppressed"]:
        return 1.0
    if kind == "num":
        lo, hi = row[f"{q}_min"], row[f"{q}_max"]
        if lo is None or hi is None:
            return 1.0
        glo, ghi = _num_range(rows, run, q)
        # an infinite bound counts as the global finite extreme on its side
        lo, hi = [float(glo if v == -math.inf else ghi if v == math.inf else v) for v in (lo, hi)]
        if not ghi > glo:
            return 0.0
        sc = 0.5 if math.isinf(float(ghi) - float(glo)) else 1.0  # halves only where it overflows
        return min(1.0, (hi * sc - lo * sc) / (float(ghi) * sc - float(glo) * sc))
    label = row[q]
    if label is None:
        return 0.0
    t = trees.get(q)
    if t is None:
        return 1.0 if label == "*" else 0.0
    if height:
        h = t.sub_height(t.root)
        return t.sub_height(label) / h if h else 0.0
    n = t.leaves(label)
    return 0.0 if n <= 1 else n / t.leaves(t.root)


def qis(run):
    return [(q, "num") for q in run["numeric_qi"]] + [(q, "cat") for q in run["categorical_qi"]]


def qi_weight(run):
    """The run's weights := per QI (kanon_runs.qi_weights, aligned with qi), 1 when none."""
    if not run.get("qi_weights"):
        return defaultdict(lambda: 1.0)
    return dict(zip(run["qi"], run["qi_weights"]))


def gcp(con, tbl):
    """Mean over rows of sum_q w_q NCP_q / sum_q w_q (w = 1 for a run without weights)."""
    rows, run, trees = load(con, tbl)
    d = qis(run)
    w = qi_weight(run)
    return sum(w[q] * ncp(rows, run, trees, r, q, k) for r in rows for q, k in d) \
        / (len(rows) * sum(w[q] for q, _ in d))


def total_il(con, tbl):
    """Byun's total IL, each QI's term times w_q * d / sum w (1 without weights)."""
    rows, run, trees = load(con, tbl)
    d = qis(run)
    w = qi_weight(run)
    scale = len(d) / sum(w[q] for q, _ in d)
    return sum(w[q] * scale * ncp(rows, run, trees, r, q, k, height=True)
               for r in rows for q, k in d)


def gen_total_il(con, tbl):
    rows, run, _ = load(con, tbl)
    return total_il(con, tbl) / (len(rows) * len(qis(run)))


def classes(rows):
    out = defaultdict(list)
    for r in rows:
        out[r["ec"]].append(r)
    return out


def discernibility(con, tbl):
    rows, _, _ = load(con, tbl)
    n = len(rows)
    return sum(n if r["suppressed"] else sum(1 for s in rows if s["ec"] == r["ec"]) for r in rows)


def cavg(con, tbl, k=None):
    rows, run, _ = load(con, tbl)
    kept = {r["ec"] for r in rows if not r["suppressed"]}
    return len(rows) / len(kept) / (k or run["k"])


def suppression(con, tbl):
    rows, _, _ = load(con, tbl)
    return sum(1 for r in rows if r["suppressed"]) / len(rows)


def cm(con, tbl, label):
    rows, _, _ = load(con, tbl)
    bad = 0
    for members in classes(rows).values():
        if members[0]["suppressed"]:
            bad += len(members)
            continue
        top = Counter(r[label] for r in members).most_common(1)[0][1]
        bad += len(members) - top
    return bad / len(rows)


def _decimals(values):
    x = 0
    for v in values:
        for d in range(7):
            if abs(v - round(v, d)) < 1e-9:
                x = max(x, d)
                break
        else:
            x = 6
    return x


def info_loss(con, tbl):
    rows, run, trees = load(con, tbl)
    names = run["numeric_qi"] + run["categorical_qi"]
    details = json.loads(run["details"] or "{}")
    if "weight_names" in details:
        names = details["weight_names"]
    w = run["weights"] or [1.0 / len(names)] * len(names)
    gamma = dict(zip(names, w))
    total = 0.0
    for q in run["numeric_qi"]:
        glo, ghi = _num_range(rows, {}, q)  # info_loss: the published range
        vals = [r[f"{q}_{s}"] for r in rows for s in ("min", "max") if r[f"{q}_{s}"] is not None]
        step = 10 ** _decimals(vals)
        dom = step * (ghi - glo) + 1
        for r in rows:
            lo, hi = r[f"{q}_min"], r[f"{q}_max"]
            if r["suppressed"] or lo is None:
                total += gamma[q]
            elif dom > 1:
                total += gamma[q] * math.log(step * (hi - lo) + 1) / math.log(dom)
    for q in run["categorical_qi"]:
        t = trees.get(q)
        for r in rows:
            lab = r[q]
            if r["suppressed"]:
                v = 1.0
            elif lab is None:
                v = 0.0
            elif t is None:
                v = 1.0 if lab == "*" else 0.0
            else:
                nr = t.leaves(t.root)
                v = 0.0 if nr <= 1 else math.log(t.leaves(lab)) / math.log(nr)
            total += gamma[q] * v
    return total


def log_level_recorded(con, tbl):
    _, run, _ = load(con, tbl)
    det = json.loads(run["details"])
    qs = run["numeric_qi"] + run["categorical_qi"]
    return sum(det["node"][q] / det["height"][q] if det["height"][q] else 0.0 for q in qs) / len(qs)


# ---- privacy checks: rows as dicts, grouped by the given columns --------------------------------

def groups(rows, cols):
    out = defaultdict(list)
    for r in rows:
        if r.get("suppressed") and "kanon_run" in r:
            continue
        out[tuple(r[c] for c in cols)].append(r)
    return out


def k_anonymity(rows, cols):
    return min(len(g) for g in groups(rows, cols).values())


def l_diversity(rows, cols, s):
    dist, ent = [], []
    for g in groups(rows, cols).values():
        c = Counter(r[s] for r in g)
        n = len(g)
        dist.append(len(c))
        ent.append(-sum(v / n * math.log(v / n) for v in c.values()))
    return min(dist), math.exp(min(ent))


def recursive_l(counts, c):
    """Largest l with r_1 < c (r_l + ... + r_m), counts sorted descending; 0 if none."""
    r = sorted((x for x in counts if x > 0), reverse=True)
    return max([l for l in range(1, len(r) + 1) if r[0] < c * sum(r[l - 1:])], default=0)


def emd_transport(p, q, ground):
    """EMD as the transport linear program (scipy): move q onto p at cost ground[i][j]."""
    import numpy as np
    from scipy.optimize import linprog
    m = len(p)
    cost = np.asarray(ground, dtype=float).reshape(-1)
    a_eq, b_eq = [], []
    for i in range(m):   # row i ships q[i]
        row = np.zeros(m * m)
        row[i * m:(i + 1) * m] = 1
        a_eq.append(row)
        b_eq.append(q[i])
    for j in range(m):   # column j receives p[j]
        col = np.zeros(m * m)
        col[j::m] = 1
        a_eq.append(col)
        b_eq.append(p[j])
    res = linprog(cost, A_eq=np.array(a_eq), b_eq=np.array(b_eq), bounds=(0, None), method="highs")
    return float(res.fun)


def tree_ground(values, parent_of):
    """Hierarchical ground distance height(LCA)/height(tree) between leaf values."""
    def path(v):
        out = [v]
        while parent_of.get(out[-1]) is not None:
            out.append(parent_of[out[-1]])
        return out
    height = max(len(path(v)) - 1 for v in values)
    def dist(a, b):
        pa, pb = path(a), path(b)
        lca = next(x for x in pa if x in pb)
        return pa.index(lca) / height  # leaves at equal depth: height(LCA) = steps from a leaf
    return [[dist(a, b) for b in values] for a in values]


def t_closeness(rows, cols, s, numeric):
    """Largest EMD of a class (suppressed rows excluded) against the WHOLE table's distribution
    (suppressed rows included: they publish their sensitive value)."""
    gs = groups(rows, cols)
    n = len(rows)
    glob = Counter(r[s] for r in rows)
    values = sorted(glob)
    m = len(values)
    worst = 0.0
    for g in gs.values():
        c = Counter(r[s] for r in g)
        q = [c.get(v, 0) / len(g) for v in values]
        p = [glob[v] / n for v in values]
        if numeric:
            cum, emd = 0.0, 0.0
            for qi, pi in zip(q, p):
                cum += qi - pi
                emd += abs(cum)
            emd = emd / (m - 1) if m > 1 else 0.0
        else:
            emd = 0.5 * sum(abs(a - b) for a, b in zip(q, p))
        worst = max(worst, emd)
    return worst


def reidentification_risk(rows, cols, threshold=0.2):
    sizes = [len(g) for g in groups(rows, cols).values()]
    n = sum(sizes)
    return {"max_risk": 1 / min(sizes), "avg_risk": len(sizes) / n,
            "records_at_risk": sum(s for s in sizes if 1 / s > threshold) / n,
            "unique_share": sum(s for s in sizes if s == 1) / n,
            "classes": len(sizes), "records": n}


def assert_losses_equal(con, tbl, gcp_value, per_qi, rel=1e-12):
    """gcp(tbl), kanon_qi_loss(tbl)'s ncp and the run's recorded qi_loss equal an exact
    recomputation: ``gcp_value`` and ``per_qi`` ({qi: mean NCP}), to ``rel``."""
    import pytest
    assert con.execute(f"SELECT gcp('{tbl}')").fetchone()[0] == pytest.approx(
        gcp_value, rel=rel, abs=1e-15)
    sql = dict(con.execute(f"SELECT qi, ncp FROM kanon_qi_loss('{tbl}')").fetchall())
    run = con.execute(f"SELECT qi, qi_loss FROM kanon_runs WHERE run_id = "
                      f"(SELECT any_value(kanon_run) FROM {tbl})").fetchone()
    for q, v in per_qi.items():
        assert sql[q] == pytest.approx(v, rel=rel, abs=1e-15), q
    for q, v in zip(*run):
        assert v == pytest.approx(per_qi[q], rel=rel, abs=1e-15), q


def exact_losses(rows, num, qi, glo, ghi):
    """(gcp, {qi: mean NCP}) in exact arithmetic of rows (suppressed, c, then value, lo, hi of
    each numeric QI in ``num``): a suppressed row or a NULL range costs 1, a range its width over
    the global range ``ghi[q] - glo[q]`` (ints, Fractions or Decimals, taken exactly); the
    categorical QI ``c`` (when in ``qi``) costs 1 when suppressed or published as '*'."""
    loss = {q: Fraction(0) for q in qi}
    for r in rows:
        sup = r[0]
        for i, q in enumerate(num):
            lo, hi = r[3 + 3 * i], r[4 + 3 * i]
            loss[q] += 1 if sup or lo is None else \
                (Fraction(hi) - Fraction(lo)) / (Fraction(ghi[q]) - Fraction(glo[q]))
        if "c" in qi:
            loss["c"] += 1 if sup or r[1] == "*" else 0
    mean = {q: v / len(rows) for q, v in loss.items()}
    return float(sum(mean.values()) / len(qi)), {q: float(v) for q, v in mean.items()}
