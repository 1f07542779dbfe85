-- Metrics, part 0: building blocks the metric macros read (pure SQL over the anonymized table,
-- kanon_runs and kanon_taxonomy; nothing cached, so a metric is right after any edit of the table
-- or of a tree).
--
-- Which columns of an anonymized table publish which QI is data (kanon_runs row of the table's
-- kanon_run); __kanon_meta(tbl) (udfs/metrics.py, folded at bind time) returns the names:
--   num_qi (numeric QIs c, published as lo_cols[i] = c_min, hi_cols[i] = c_max) and cat_qi.
-- The padding columns (__kanon_pad_*) keep every COLUMNS(...) non-empty (an empty one is a bind
-- error when a run has no numeric or no categorical QI); slices [:d] cut them off again.
--
-- NCP (normalized certainty penalty, Xu et al. 2006) of a published value:
--   numeric     (c_max - c_min) / (global max - global min), the global range being the
--               data's (finite values, recorded by the run: __kanon_meta(tbl).num_lo/num_hi;
--               an integer QI's exactly in int_lo/int_hi, its range an integer difference;
--               for a run recorded without it, min(c_min)..max(c_max) of the finite published
--               values); 0 when the global range is empty; a NULL range (class holding a NULL,
--               "any value") counts 1, also for a constant column; a bound -inf / +inf counts
--               as the global finite min / max. Computed on halves, so -1e308..1e308 does not
--               overflow. This is
--               the SQL text of kanon_duckdb/ncp.py (tests/test_ncp_definition.py holds them
--               equal).
--   categorical 0 if the label's node covers one leaf, else leaves(node) / leaves(root), leaves
--               counted in the TREE of kanon_taxonomy (leaves absent from the data count); the
--               root counts 1 also in a tree of one leaf (beside NULL it hides which). A NULL
--               label (the NULL policy's own leaf) counts 0. A QI without a tree in kanon_taxonomy
--               has the implicit flat tree value -> '*': '*' counts 1, any other label 0.
--   suppressed rows count 1 on every QI, whatever they publish.
-- Height ratio (Byun et al. 2007): numeric as NCP; categorical height(subtree of the label) /
--   height(tree) (flat tree: '*' 1, other labels 0).

-- The column look-ups of udfs/metrics.py, told which connection is asking: registering an
-- object sets the variable on that connection or cursor (kanon_duckdb/registered.py);
-- getvariable is allowed inside COLUMNS lambdas, current_connection_id() is not.
CREATE OR REPLACE MACRO __kanon_meta(tbl) AS __kanon_meta_in(tbl, getvariable('__kanon_conn_id'));
CREATE OR REPLACE MACRO __kanon_qi_cols(tbl, qi) AS
    __kanon_qi_cols_in(tbl, qi, getvariable('__kanon_conn_id'));
CREATE OR REPLACE MACRO __kanon_column(tbl, name) AS
    __kanon_column_in(tbl, name, getvariable('__kanon_conn_id'));
CREATE OR REPLACE MACRO __kanon_output_cols(tbl) AS
    __kanon_output_cols_in(tbl, getvariable('__kanon_conn_id'));

-- kanon_taxonomy_nodes(attrs := NULL): one row per (attr, node) of every tree in kanon_taxonomy
-- (or only of the trees named in the list attrs: each tree is computed on its own) with depth
-- (edges from the root), n_leaves (leaves below it, itself if a leaf), sub_height (height of its
-- subtree, 0 for a leaf), root_leaves and height (of the whole tree).
-- A self-edge (X, X) keeps label X for one more level (ARX hierarchies, see
-- kanon_duckdb/taxonomy/tree.py build_index): e(X) self-edge rows give X a chain of e + 1 levels.
-- Levels count from the leaves: hmin(X) = max over D below or at X of e(D) + dist(D, X); the root
-- is at level hmin(root); a child c of X tops at min(top(X), max(top(X) - e(X), hmin(c) + 1)) - 1.
-- A label is a leaf when it has no other child or its chain reaches level 0 (a data value that is
-- also its own level-1 group). A row describes the label's top node; without self-edges every
-- label is one node and this is the plain tree.
CREATE OR REPLACE MACRO kanon_taxonomy_nodes(attrs := NULL) AS TABLE
WITH RECURSIVE rows_ AS (
    SELECT attr, child, parent FROM kanon_taxonomy
    WHERE child IS NOT NULL AND (attrs IS NULL OR list_contains(attrs::VARCHAR[], attr))
),
extra AS (SELECT attr, child AS node, count(*) AS e FROM rows_ WHERE child = parent GROUP BY ALL),
edges AS (SELECT DISTINCT attr, child, parent FROM rows_ WHERE child IS DISTINCT FROM parent),
labels AS (
    SELECT attr, child AS node FROM edges
    UNION SELECT attr, parent FROM edges WHERE parent IS NOT NULL
    UNION SELECT attr, node FROM extra
),
sizes AS (SELECT attr, count(*) AS n_edges FROM edges GROUP BY attr),
up(attr, src, node, dist) AS (
    SELECT attr, node, node, 0 FROM labels
    UNION ALL
    SELECT u.attr, u.src, e.parent, u.dist + 1
    FROM up u JOIN edges e ON e.attr = u.attr AND e.child = u.node
    JOIN sizes s ON s.attr = u.attr
    -- a path in a tree has fewer edges than the tree: any depth is walked, a cycle stops
    WHERE e.parent IS NOT NULL AND u.dist < s.n_edges
),
hmin AS (
    SELECT u.attr, u.node, max(coalesce(x.e, 0) + u.dist) AS hmin
    FROM up u LEFT JOIN extra x ON x.attr = u.attr AND x.node = u.src
    GROUP BY u.attr, u.node
),
down(attr, node, top, dist) AS (
    SELECT h.attr, h.node, h.hmin, 0 FROM hmin h
    WHERE NOT EXISTS (SELECT 1 FROM edges e WHERE e.attr = h.attr AND e.child = h.node
                                                 AND e.parent IS NOT NULL)
    UNION ALL
    SELECT d.attr, e.child,
           least(d.top, greatest(d.top - coalesce(x.e, 0), hc.hmin + 1)) - 1, d.dist + 1
    FROM down d JOIN edges e ON e.attr = d.attr AND e.parent = d.node
    JOIN hmin hc ON hc.attr = e.attr AND hc.node = e.child
    LEFT JOIN extra x ON x.attr = d.attr AND x.node = d.node
    JOIN sizes s ON s.attr = d.attr
    WHERE d.dist < s.n_edges   -- any depth; a cycle stops
),
tops AS (
    SELECT d.attr, d.node, d.top, d.top - coalesce(x.e, 0) AS bottom,
           NOT EXISTS (SELECT 1 FROM edges c WHERE c.attr = d.attr AND c.parent = d.node)
               OR d.top - coalesce(x.e, 0) = 0 AS is_leaf
    FROM down d LEFT JOIN extra x ON x.attr = d.attr AND x.node = d.node
),
nodes AS (
    SELECT u.attr, u.node, count(*) AS n_leaves, min(l.bottom) AS leaf_bottom
    FROM up u JOIN tops l ON l.attr = u.attr AND l.node = u.src AND l.is_leaf
    GROUP BY u.attr, u.node
),
full_ AS (
    SELECT t.attr, t.node, t.top, n.n_leaves, t.top - n.leaf_bottom AS sub_height,
           max(t.top) OVER (PARTITION BY t.attr) AS root_top
    FROM tops t JOIN nodes n ON n.attr = t.attr AND n.node = t.node
)
SELECT attr, node, root_top - top AS depth, n_leaves, sub_height,
       max(n_leaves) OVER (PARTITION BY attr) AS root_leaves,
       max(sub_height) OVER (PARTITION BY attr) AS height
FROM full_;

-- kanon_label_ncp(tbl): for every label a categorical QI of `tbl` can publish (every node of the
-- tree its run used, __kanon_meta(tbl).cat_trees, or '*' of the implicit flat tree): has_tree, ncp, height_ratio and info_ratio
-- (log leaves(label) / log leaves(root), eq. 3 of Yuan et al., see info_loss).
CREATE OR REPLACE MACRO kanon_label_ncp(tbl) AS TABLE
WITH qis AS (SELECT unnest(m.cat_qi) AS qi, unnest(m.cat_trees) AS tree
             FROM (SELECT __kanon_meta(tbl) AS m)),
tree AS (
    SELECT q.qi, n.* FROM qis q   -- only the run's trees (Adult's fnlwgt tree alone has 20k rows)
    JOIN kanon_taxonomy_nodes(attrs := __kanon_meta(tbl).cat_trees) n ON n.attr = q.tree
)
SELECT t.qi, t.node AS label, true AS has_tree,
       CASE WHEN t.depth = 0 THEN 1.0 WHEN t.n_leaves <= 1 THEN 0.0
            ELSE t.n_leaves / t.root_leaves END AS ncp,
       CASE WHEN t.height = 0 THEN 0.0 ELSE t.sub_height / t.height END AS height_ratio,
       CASE WHEN t.root_leaves <= 1 THEN 0.0 ELSE ln(t.n_leaves) / ln(t.root_leaves) END AS info_ratio
FROM tree t
UNION ALL
SELECT qi, '*', false, 1.0, 1.0, 1.0 FROM qis WHERE qi NOT IN (SELECT qi FROM tree);

-- kanon_classes(tbl): one row per class (distinct ec): run_id, ec, size, suppressed, and the
-- published values as lists: lo / hi DOUBLE[] aligned with __kanon_meta(tbl).num_qi, labels
-- VARCHAR[] aligned with __kanon_meta(tbl).cat_qi.
CREATE OR REPLACE MACRO kanon_classes(tbl) AS TABLE
WITH src AS (
    SELECT *, NULL::DOUBLE AS __kanon_pad_lo, NULL::DOUBLE AS __kanon_pad_hi,
           NULL::VARCHAR AS __kanon_pad_cat
    FROM __kanon_read(tbl)
),
cls AS (
    SELECT ec AS __kanon_ec, count(*) AS __kanon_size, bool_or(suppressed) AS __kanon_sup,
        any_value(COLUMNS(lambda x: x IN ('__kanon_pad_lo', '__kanon_pad_hi', '__kanon_pad_cat')
                          OR list_contains(__kanon_meta(tbl).lo_cols, x)
                          OR list_contains(__kanon_meta(tbl).hi_cols, x)
                          OR list_contains(__kanon_meta(tbl).cat_qi, x)))
    FROM src
    GROUP BY ec
),
lists AS (
    SELECT __kanon_ec, __kanon_size, __kanon_sup,
        list_value(*COLUMNS(lambda x: x = '__kanon_pad_lo'
                            OR list_contains(__kanon_meta(tbl).lo_cols, x))) AS __kanon_lo,
        list_value(*COLUMNS(lambda x: x = '__kanon_pad_hi'
                            OR list_contains(__kanon_meta(tbl).hi_cols, x))) AS __kanon_hi,
        list_value(*COLUMNS(lambda x: x = '__kanon_pad_cat'
                            OR list_contains(__kanon_meta(tbl).cat_qi, x))) AS __kanon_labels
    FROM cls
)
SELECT __kanon_meta(tbl).run_id AS run_id, __kanon_ec AS ec, __kanon_size AS size,
       __kanon_sup AS suppressed,
       (__kanon_lo::DOUBLE[])[:len(__kanon_meta(tbl).num_qi)] AS lo,
       (__kanon_hi::DOUBLE[])[:len(__kanon_meta(tbl).num_qi)] AS hi,
       (__kanon_labels::VARCHAR[])[:len(__kanon_meta(tbl).cat_qi)] AS labels
FROM lists;

-- Helpers of kanon_qi_loss (a COLUMNS(...) may appear once per expression): a bound as DOUBLE
-- when it is finite (and small / large in magnitude: the sum is split so that values near 1e308
-- cannot overflow it; large ones are summed scaled by 1e-100), and 1 when it equals v.
CREATE OR REPLACE MACRO __kanon_finite(x) AS CASE WHEN isfinite(x::DOUBLE) THEN x::DOUBLE END;
CREATE OR REPLACE MACRO __kanon_small(x) AS CASE WHEN abs(x::DOUBLE) <= 1e290 THEN x::DOUBLE END;
CREATE OR REPLACE MACRO __kanon_big(x) AS
    CASE WHEN isfinite(x::DOUBLE) AND abs(x::DOUBLE) > 1e290 THEN x::DOUBLE * 1e-100 END;
CREATE OR REPLACE MACRO __kanon_is(x, v) AS CASE WHEN x::DOUBLE = v THEN 1 ELSE 0 END;
-- A numeric bound minus its QI's centre c (the run's global minimum: exact for an integer QI
-- (m.int_lo), else rounded, 0 when unknown or beyond 1e37), as DOUBLE; an integer bound is
-- subtracted exactly (HUGEINT) first. The plain sums
-- of kanon_qi_loss are sums of centred bounds: sum(hi) - sum(lo) of raw BIGINTs near 2^61 lost
-- every digit of the spans (gcp() 0 instead of 4.6e-6 on 300k rows), a double of the spans' size
-- keeps them. The centre is the same for a QI's lo and hi column, so it cancels in the spans.
CREATE OR REPLACE MACRO __kanon_qi_pos(m, col) AS
    coalesce(list_position(m.lo_cols, col), list_position(m.hi_cols, col));
CREATE OR REPLACE MACRO __kanon_center(m, col) AS
    coalesce(list_extract(m.int_lo, __kanon_qi_pos(m, col))::HUGEINT,
             CASE WHEN abs(list_extract(m.num_lo, __kanon_qi_pos(m, col))) < 1e37
                  THEN round(list_extract(m.num_lo, __kanon_qi_pos(m, col)))::HUGEINT END,
             0::HUGEINT);
CREATE OR REPLACE MACRO __kanon_is_int(x) AS
    typeof(x) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT',
                  'USMALLINT', 'UINTEGER', 'UBIGINT', 'UHUGEINT');
CREATE OR REPLACE MACRO __kanon_centred(x, c) AS
    CASE WHEN __kanon_is_int(x) THEN (TRY_CAST(x AS HUGEINT) - c)::DOUBLE ELSE x::DOUBLE - c::DOUBLE END;
-- The same for the exact pass of kanon_qi_loss: integer bounds centred (never infinite), others
-- as they are (its infinite-bound terms count +-inf as the uncentred global extremes).
CREATE OR REPLACE MACRO __kanon_int_centred(x, c) AS
    CASE WHEN __kanon_is_int(x) THEN (TRY_CAST(x AS HUGEINT) - c)::DOUBLE ELSE x::DOUBLE END;

-- Column lists of kanon_qi_loss, each with its padding column last (COLUMNS(list) selects them in
-- table order; the padding columns are the last ones of the table). A list, not a lambda: DuckDB
-- evaluates it once per COLUMNS instead of once per column of the table.
CREATE OR REPLACE MACRO __kanon_lo_cols(tbl) AS __kanon_meta(tbl).lo_cols || ['__kanon_pad_lo'];
CREATE OR REPLACE MACRO __kanon_hi_cols(tbl) AS __kanon_meta(tbl).hi_cols || ['__kanon_pad_hi'];
CREATE OR REPLACE MACRO __kanon_bounds(tbl) AS __kanon_lo_cols(tbl) || __kanon_hi_cols(tbl);
CREATE OR REPLACE MACRO __kanon_cat_cols(tbl) AS __kanon_meta(tbl).cat_qi || ['__kanon_pad_cat'];

-- kanon_qi_loss(tbl): one row per QI of the anonymized table `tbl`:
--   qi, kind ('numeric' | 'categorical'), n (rows), ncp_sum (sum over rows of the NCP of the
--   row's published value), ncp (= ncp_sum / n, the mean NCP, as kanon_runs.qi_loss),
--   il_sum (sum over rows of the height ratio), weight (the QI's weight in the run's loss,
--   weights := scaled to mean 1 over the QIs; 1 without weights).
-- One pass over the table, grouped by the suppressed flag: plain sums of the numeric bounds (the
-- sum of the spans), counts of NULL bounds, finite extremes; categorical a histogram of the labels
-- joined with kanon_label_ncp. When a plain sum is not finite (an infinite bound, or a sum that
-- overflows a double) a second pass (`exact`) recomputes the numeric sums split by magnitude and
-- counts the infinite bounds; it reads no row otherwise, so the common case costs one pass.
CREATE OR REPLACE MACRO kanon_qi_loss(tbl) AS TABLE
WITH agg AS MATERIALIZED (   -- one pass, grouped by the suppressed flag (2 rows, shared by both parts)
    SELECT suppressed AS __kanon_sup, count(*) AS __kanon_n,
        sum(__kanon_centred(COLUMNS(__kanon_lo_cols(tbl)), __kanon_center(__kanon_meta(tbl),
            alias(COLUMNS(__kanon_lo_cols(tbl)))))) AS 'sl_\0',
        sum(__kanon_centred(COLUMNS(__kanon_hi_cols(tbl)), __kanon_center(__kanon_meta(tbl),
            alias(COLUMNS(__kanon_hi_cols(tbl)))))) AS 'sh_\0',
        count(COLUMNS(__kanon_lo_cols(tbl))) AS 'nn_\0',
        min(COLUMNS(__kanon_lo_cols(tbl))::DOUBLE) AS 'fl_\0',
        max(COLUMNS(__kanon_hi_cols(tbl))::DOUBLE) AS 'fh_\0',
        histogram(COLUMNS(__kanon_cat_cols(tbl)))
            AS 'hist_\0'
    FROM (SELECT *, NULL::DOUBLE AS __kanon_pad_lo, NULL::DOUBLE AS __kanon_pad_hi,
                 NULL::VARCHAR AS __kanon_pad_cat
          FROM __kanon_read(tbl))
    GROUP BY suppressed
),
plain AS (   -- agg's columns picked by prefix (one per aggregate, in agg's order; no UDF call)
    SELECT coalesce(__kanon_sup, false) AS sup, __kanon_n AS n,
        list_value(*COLUMNS('^sl_')) AS sa_lo, list_value(*COLUMNS('^sh_')) AS sa_hi,
        list_value(*COLUMNS('^nn_')) AS nn_lo, list_value(*COLUMNS('^fl_')) AS fl_lo,
        list_value(*COLUMNS('^fh_')) AS fh_hi, list_value(*COLUMNS('^hist_')) AS hist
    FROM agg
),
all_finite AS (   -- every plain sum finite: no infinite bound, no overflow (NULL: no value)
    SELECT coalesce(bool_and(list_bool_and(list_transform(sa_lo || sa_hi,
               lambda v: v IS NULL OR isfinite(v)))), true) AS ok
    FROM plain
),
exact AS MATERIALIZED (   -- only when a plain sum is not finite (no row read otherwise): per bound column,
             -- sums split so that values near 1e308 cannot overflow, infinite bounds counted
             -- (they count as the global finite extremes, ncp.py), finite extremes
    WITH bounds AS (
        SELECT suppressed AS __kanon_sup,   -- integer bounds centred as in agg
               __kanon_int_centred(COLUMNS(__kanon_bounds(tbl)), __kanon_center(__kanon_meta(tbl),
                   alias(COLUMNS(__kanon_bounds(tbl))))) AS '\0'
        FROM (SELECT *, NULL::DOUBLE AS __kanon_pad_lo, NULL::DOUBLE AS __kanon_pad_hi
              FROM __kanon_read(tbl)) t
        -- an empty join side when every sum is finite: the table is not scanned
        JOIN (SELECT unnest([false, true]) AS go FROM all_finite WHERE NOT ok) g
          ON g.go = coalesce(t.suppressed, false)
    ),
    cells AS (UNPIVOT bounds ON COLUMNS(* EXCLUDE (__kanon_sup)) INTO NAME col VALUE v)
    SELECT coalesce(__kanon_sup, false) AS sup, col,
           sum(__kanon_small(v)) AS sa, sum(__kanon_big(v)) AS sb,
           count_if(v = 'inf'::DOUBLE) AS pi, count_if(v = '-inf'::DOUBLE) AS ni,
           min(__kanon_finite(v)) AS fmin, max(__kanon_finite(v)) AS fmax
    FROM cells GROUP BY ALL
),
meta AS (SELECT __kanon_meta(tbl) AS m),   -- named once: each mention is a UDF call at bind time
num_plain AS (   -- one row per (suppressed flag, numeric QI)
    SELECT sup, n, unnest(m.num_qi) AS qi, unnest(m.lo_cols) AS lo_col, unnest(m.hi_cols) AS hi_col,
           unnest(m.num_lo) AS mlo, unnest(m.num_hi) AS mhi, unnest(m.num_w) AS w,
           unnest(m.int_lo) AS ilo, unnest(m.int_hi) AS ihi,
           unnest(sa_lo[:len(m.num_qi)]) AS psa_lo, unnest(sa_hi[:len(m.num_qi)]) AS psa_hi,
           unnest(nn_lo[:len(m.num_qi)]) AS cnt,
           unnest(fl_lo[:len(m.num_qi)]) AS pflo, unnest(fh_hi[:len(m.num_qi)]) AS pfhi
    FROM plain, meta
),
num AS (   -- the exact pass where it ran, else the plain sums (nothing split, no infinity)
    SELECT n.sup, n.n, n.qi, n.mlo, n.mhi, n.ilo, n.ihi, n.w, n.cnt,
           CASE WHEN f.ok THEN n.psa_lo ELSE el.sa END AS sa_lo,
           CASE WHEN f.ok THEN n.psa_hi ELSE eh.sa END AS sa_hi,
           el.sb AS sb_lo, eh.sb AS sb_hi, el.pi AS pi_lo, eh.pi AS pi_hi,
           el.ni AS ni_lo, eh.ni AS ni_hi,
           CASE WHEN f.ok THEN n.pflo ELSE el.fmin END AS flo,
           CASE WHEN f.ok THEN n.pfhi ELSE eh.fmax END AS fhi
    FROM num_plain n CROSS JOIN all_finite f
    LEFT JOIN exact el ON el.sup = n.sup AND el.col = n.lo_col
    LEFT JOIN exact eh ON eh.sup = n.sup AND eh.col = n.hi_col
),
num_rng AS (   -- the run's global range, else the finite published range over every row
    SELECT *, coalesce(mlo, min(flo) OVER (PARTITION BY qi)) AS rlo,
              coalesce(mhi, max(fhi) OVER (PARTITION BY qi)) AS rhi
    FROM num
),
num_sc0 AS (  -- halve the bounds only where the range overflows (halving is exact above the
              -- subnormals, so the ratios are the same; halving a subnormal range gives 0)
    SELECT *, CASE WHEN isinf(rhi - rlo) THEN 0.5 ELSE 1.0 END AS sc FROM num_rng
),
num_sc AS (   -- the divisor (on halves): an integer QI's exact range rounded once (ncp.py)
    SELECT *, CASE WHEN ilo IS NOT NULL THEN (ihi::HUGEINT - ilo)::DOUBLE
                   ELSE rhi * sc - rlo * sc END AS rng,
              CASE WHEN ilo IS NOT NULL THEN ihi > ilo ELSE rhi > rlo END AS wide
    FROM num_sc0
),
num_loss AS (   -- sum of spans / range (on halves where the range overflows) + 1 per NULL range
    SELECT qi, 'numeric' AS kind, any_value(w) AS weight, sum(n) AS n,
           sum(CASE WHEN sup THEN n
                    ELSE (CASE WHEN wide THEN
                              -- each infinite bound's share divided first: count * (rhi * sc)
                              -- overflows past 3 bounds near 1e308
                              (coalesce(sa_hi, 0) * sc - coalesce(sa_lo, 0) * sc) / rng
                              + (coalesce(pi_hi, 0) - coalesce(pi_lo, 0)) * ((rhi * sc) / rng)
                              + (coalesce(ni_hi, 0) - coalesce(ni_lo, 0)) * ((rlo * sc) / rng)
                              + CASE WHEN coalesce(sb_hi, 0) = coalesce(sb_lo, 0) THEN 0.0
                                     -- 1e100 / a subnormal range is inf: only where sb is used
                                     ELSE (coalesce(sb_hi, 0) * sc - coalesce(sb_lo, 0) * sc)
                                          * (1e100 / rng) END
                          ELSE 0.0 END)
                         + (n - cnt)
               END) AS ncp_sum
    FROM num_sc GROUP BY qi
),
cat AS (
    SELECT sup, n, unnest(m.cat_qi) AS qi, unnest(m.cat_w) AS w,
           unnest(hist[:len(m.cat_qi)]) AS hist
    FROM plain, meta
),
cat_counts AS (
    SELECT qi, unnest(map_keys(hist))::VARCHAR AS label, unnest(map_values(hist)) AS cnt
    FROM cat WHERE NOT sup
),
label_ncp AS (FROM kanon_label_ncp(tbl)),
cat_part AS (
    SELECT c.qi,
        sum(c.cnt * CASE
            WHEN l.qi IS NOT NULL THEN l.ncp
            WHEN c.qi IN (SELECT qi FROM label_ncp WHERE has_tree) THEN
                error('label ''' || c.label || ''' of categorical QI ''' || c.qi
                      || ''' is not a node of its tree in kanon_taxonomy')
            ELSE 0.0 END) AS ncp_part,
        sum(c.cnt * coalesce(l.height_ratio, 0.0)) AS il_part
    FROM cat_counts c LEFT JOIN label_ncp l ON l.qi = c.qi AND l.label = c.label
    GROUP BY c.qi
),
cat_loss AS (
    SELECT cat.qi, 'categorical' AS kind, any_value(cat.w) AS weight, sum(cat.n) AS n,
           sum(CASE WHEN cat.sup THEN cat.n ELSE coalesce(p.ncp_part, 0) END) AS ncp_sum,
           sum(CASE WHEN cat.sup THEN cat.n ELSE coalesce(p.il_part, 0) END) AS il_sum
    FROM cat LEFT JOIN cat_part p ON p.qi = cat.qi
    GROUP BY cat.qi
)
SELECT qi, kind, n, ncp_sum, ncp_sum / n AS ncp, ncp_sum AS il_sum, weight FROM num_loss
UNION ALL
SELECT qi, kind, n, ncp_sum, ncp_sum / n, il_sum, weight FROM cat_loss;
