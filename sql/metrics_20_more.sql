-- Metrics, part 2: classification metric, information-quantity loss (issue 3) and the lattice
-- metrics (issue 4). Same conventions as metrics_00_base.sql / metrics_10_core.sql.

-- cm(tbl, label): Iyengar 2002 classification metric: the fraction of rows that are suppressed or
-- whose `label` (a class label column, e.g. 'income') differs from the majority label of their
-- equivalence class (ec). Ties: any majority value (the penalty does not depend on which).
CREATE OR REPLACE MACRO cm(tbl, label) AS (
    WITH lab AS (
        SELECT ec, suppressed, COLUMNS(lambda x: x = __kanon_column(tbl, label)) AS v
        FROM __kanon_output(tbl)
    ),
    cnt AS (SELECT ec, v, count(*) AS c, bool_or(suppressed) AS sup FROM lab GROUP BY ec, v),
    cls AS (SELECT ec, sum(c) AS n, max(c) AS majority, bool_or(sup) AS sup FROM cnt GROUP BY ec)
    SELECT sum(CASE WHEN sup THEN n ELSE n - majority END) / sum(n) FROM cls
);

-- info_loss(tbl): eq. 4 of Yuan et al. (info-quantity-2means-greedy.txt), the information-quantity
-- loss IL(DT) = sum_t IL(N_t) + sum_tau IL(C_tau):
--   numeric QI t (eq. 2):     gamma_t * sum over rows log(10^x (s_max - s_min) + 1) / log |R_t|,
--       [s_min, s_max] the row's published range, |R_t| = 10^x (global max - global min) + 1 the
--       number of values of the attribute's domain, x its decimal step (x = 0 for integers,
--       x = 1 for a 0.1 step; found from the published values, at most 6); 0 when |R_t| = 1.
--   categorical QI tau (eq. 3): gamma * sum over rows log leaves(label) / log leaves(root); 0 when
--       the tree has one leaf. Flat tree (no tree in kanon_taxonomy): '*' counts 1, others 0.
--   NULL ranges and suppressed rows count 1 (everything lost); NULL labels 0.
-- Weights gamma: `weights := MAP {'age': 0.3, ...}` (one entry per QI of the table, any QI
-- missing or extra is an error), so outputs of different algorithms can be scored with the same
-- weights, e.g. weights := kanon_run_weights('adult_info2means') (the weights info2means learned).
-- Without it: kanon_runs.weights of the table's run, aligned with details->'weight_names' when
-- recorded, else with numeric_qi followed by categorical_qi (the paper's order, eq. 5); else the
-- run's weights := normalized to sum 1 (kanon_runs.qi_weights); a run without weights (any
-- algorithm but info2means, no weights :=) gets equal weights 1/d. The result is the
-- paper's sum (it grows with N); divide by count(*) for a per-row figure.
CREATE OR REPLACE MACRO info_loss(tbl, weights := NULL) AS (
    WITH run AS (
        SELECT r.numeric_qi, r.categorical_qi,
               -- a run made with weights := (kanon_runs.qi_weights): gamma_q = w_q / sum w
               coalesce(r.weights, CASE WHEN r.qi_weights IS NOT NULL THEN list_transform(
                   list_concat(r.numeric_qi, r.categorical_qi),
                   lambda q: r.qi_weights[list_position(r.qi, q)] / list_sum(r.qi_weights)) END)
                   AS run_weights,
               CASE WHEN json_exists(r.details, '$.weight_names')
                    THEN CAST(r.details->'weight_names' AS VARCHAR[])
                    ELSE list_concat(r.numeric_qi, r.categorical_qi) END AS weight_names
        FROM kanon_runs r WHERE r.run_id = __kanon_meta(tbl).run_id
    ),
    given AS (SELECT CAST(weights AS MAP(VARCHAR, DOUBLE)) AS m),
    w AS (
        SELECT unnest(weight_names) AS qi,
               unnest(coalesce(run_weights, list_transform(weight_names,
                                                           lambda q: 1.0 / len(weight_names)))) AS gamma
        FROM run WHERE (SELECT m FROM given) IS NULL
        UNION ALL
        SELECT q AS qi,
               CASE WHEN len(list_filter(map_keys(m), lambda x: NOT list_contains(qis, x))) > 0 THEN
                        error('info_loss: weights name columns that are not QIs of the table: '
                              || list_filter(map_keys(m), lambda x: NOT list_contains(qis, x))::VARCHAR
                              || ' (its QIs: ' || qis::VARCHAR || ')')
                    WHEN NOT map_contains(m, q) THEN
                        error('info_loss: weights has no entry for QI ''' || q || '''; give one per QI: '
                              || qis::VARCHAR)
                    ELSE m[q] END AS gamma
        FROM (SELECT m, list_concat(numeric_qi, categorical_qi) AS qis,
                     unnest(list_concat(numeric_qi, categorical_qi)) AS q
              FROM run, given WHERE m IS NOT NULL)
    ),
    cls AS MATERIALIZED (FROM kanon_classes(tbl)),
    num AS (
        SELECT size, suppressed, unnest(__kanon_meta(tbl).num_qi) AS qi, unnest(lo) AS lo,
               unnest(hi) AS hi
        FROM cls
    ),
    num_dom AS (
        SELECT qi, min(lo) AS glo, max(hi) AS ghi,
               max(CASE WHEN v = round(v, 0) THEN 0 WHEN abs(v - round(v, 1)) < 1e-9 THEN 1
                        WHEN abs(v - round(v, 2)) < 1e-9 THEN 2 WHEN abs(v - round(v, 3)) < 1e-9 THEN 3
                        WHEN abs(v - round(v, 4)) < 1e-9 THEN 4 WHEN abs(v - round(v, 5)) < 1e-9 THEN 5
                        ELSE 6 END) AS x
        FROM (SELECT qi, lo, hi, unnest([lo, hi]) AS v FROM num)
        WHERE v IS NOT NULL
        GROUP BY qi
    ),
    num_il AS (
        SELECT n.qi, sum(n.size * CASE
            WHEN n.suppressed OR n.lo IS NULL OR n.hi IS NULL THEN 1.0
            WHEN pow(10, d.x) * (d.ghi - d.glo) + 1 <= 1 THEN 0.0
            ELSE ln(pow(10, d.x) * (n.hi - n.lo) + 1) / ln(pow(10, d.x) * (d.ghi - d.glo) + 1)
            END) AS il
        FROM num n LEFT JOIN num_dom d ON d.qi = n.qi
        GROUP BY n.qi
    ),
    cat AS (
        SELECT size, suppressed, unnest(__kanon_meta(tbl).cat_qi) AS qi, unnest(labels) AS label
        FROM cls
    ),
    label_ncp AS (FROM kanon_label_ncp(tbl)),
    cat_il AS (
        SELECT c.qi, sum(c.size * CASE
            WHEN c.suppressed THEN 1.0
            WHEN c.label IS NULL THEN 0.0
            WHEN l.qi IS NOT NULL THEN l.info_ratio
            WHEN c.qi IN (SELECT qi FROM label_ncp WHERE has_tree) THEN
                error('label ''' || c.label || ''' of categorical QI ''' || c.qi
                      || ''' is not a node of its tree in kanon_taxonomy')
            ELSE 0.0 END) AS il
        FROM cat c LEFT JOIN label_ncp l ON l.qi = c.qi AND l.label = c.label
        GROUP BY c.qi
    ),
    il AS (SELECT * FROM num_il UNION ALL SELECT * FROM cat_il)
    SELECT sum(w.gamma * il.il) FROM il JOIN w ON w.qi = il.qi
);

-- kanon_run_weights(tbl): MAP QI -> weight of the run that produced `tbl` (kanon_runs.weights,
-- aligned as info_loss aligns them; NULL when the run recorded none). For info_loss(weights := ...).
CREATE OR REPLACE MACRO kanon_run_weights(tbl) AS (
    SELECT CASE WHEN r.weights IS NULL THEN NULL ELSE map(
               CASE WHEN json_exists(r.details, '$.weight_names')
                    THEN CAST(r.details->'weight_names' AS VARCHAR[])
                    ELSE list_concat(r.numeric_qi, r.categorical_qi) END, r.weights) END
    FROM kanon_runs r WHERE r.run_id = __kanon_meta(tbl).run_id
);

-- log_level(tbl): KGEN's LOG (eq. 1-2 of kgen-genetic-lattice-k-anonymity.txt): mean over QIs of
-- level / height of the QI's hierarchy, for a full-domain (lattice) run: the levels and heights
-- are those the run chose and recorded (kanon_runs.details 'node' and 'height', QI -> int; a
-- hierarchy of height 0 counts 0). For a run without them (local recoding) whose QIs are all
-- categorical, the level of a published label is height(tree) - depth(label), averaged over the
-- non-suppressed rows; otherwise NULL (no single level per QI).
CREATE OR REPLACE MACRO log_level(tbl) AS (
    WITH run AS (
        SELECT details, numeric_qi, categorical_qi FROM kanon_runs
        WHERE run_id = __kanon_meta(tbl).run_id
    ),
    recorded AS (
        SELECT avg(CASE WHEN h = 0 THEN 0.0 ELSE lv / h END) AS log
        FROM (
            SELECT q, CAST((details->'node')->>q AS DOUBLE) AS lv,
                      CAST((details->'height')->>q AS DOUBLE) AS h
            FROM (SELECT details, unnest(list_concat(numeric_qi, categorical_qi)) AS q FROM run)
        )
    ),
    use_recorded AS (
        SELECT json_exists(details, '$.node') AND json_exists(details, '$.height') AS yes FROM run
    ),
    cat AS (   -- only read when nothing was recorded
        SELECT size, unnest(__kanon_meta(tbl).cat_qi) AS qi, unnest(labels) AS label
        FROM kanon_classes(tbl)
        WHERE NOT suppressed AND NOT (SELECT yes FROM use_recorded)
    ),
    nodes AS (
        SELECT q.qi, n.node AS label, n.depth, n.height
        FROM (SELECT unnest(__kanon_meta(tbl).cat_qi) AS qi,
                     unnest(__kanon_meta(tbl).cat_trees) AS tree) q
        JOIN kanon_taxonomy_nodes(attrs := __kanon_meta(tbl).cat_trees) n ON n.attr = q.tree
    ),
    derived AS (
        SELECT avg(per_qi) AS log FROM (
            SELECT c.qi, sum(c.size * CASE
                    WHEN nd.qi IS NULL THEN CASE WHEN c.label = '*' THEN 1.0 ELSE 0.0 END
                    WHEN nd.height = 0 THEN 0.0
                    ELSE (nd.height - nd.depth) / nd.height END) / sum(c.size) AS per_qi
            FROM cat c LEFT JOIN nodes nd ON nd.qi = c.qi AND nd.label = c.label
            GROUP BY c.qi
        )
    )
    SELECT CASE
        WHEN (SELECT yes FROM use_recorded) THEN (SELECT log FROM recorded)
        WHEN len(__kanon_meta(tbl).num_qi) = 0 THEN (SELECT log FROM derived)
        ELSE NULL END
);

-- kanon_lattice_acc(run_ids, reference_run_id): table (pos, run_id, acc), eq. 4 of
-- kgen-genetic-lattice-k-anonymity.txt for each kanon_runs row of `run_ids` (pos = 1-based place
-- in the list) against the reference run (see lattice_accuracy).
CREATE OR REPLACE MACRO kanon_lattice_acc(run_ids, ref_rid) AS TABLE
WITH sol AS (SELECT unnest(run_ids) AS run_id, generate_subscripts(run_ids, 1) AS pos),
h AS (
    SELECT run_id,
        (SELECT sum(CAST(value AS BIGINT)) FROM json_each(details, '$.node')) AS node_h,
        (SELECT sum(CAST(value AS BIGINT)) FROM json_each(details, '$.height')) AS top_h,
        json_extract(details, '$.height') AS heights
    FROM kanon_runs WHERE list_contains(run_ids, run_id) OR run_id = ref_rid
),
o AS (SELECT * FROM h WHERE run_id = ref_rid)
SELECT sol.pos, sol.run_id, CASE
    WHEN s.node_h IS NULL OR o.node_h IS NULL THEN
        error('lattice_accuracy needs two full-domain runs that recorded their lattice node '
              || '(kanon_runs.details ''node'' and ''height''), e.g. algo := ''kgen'' and '
              || 'algo := ''optimal''')
    WHEN s.heights::VARCHAR <> o.heights::VARCHAR THEN
        error('lattice_accuracy: the two runs have different lattices (QIs or hierarchy '
              || 'heights differ: ' || s.heights::VARCHAR || ' vs ' || o.heights::VARCHAR || ')')
    WHEN o.top_h = o.node_h THEN CASE WHEN s.node_h = o.node_h THEN 1.0 ELSE 0.0 END
    ELSE 1.0 - abs(s.node_h - o.node_h) / (o.top_h - o.node_h)
END AS acc
FROM sol LEFT JOIN h s ON s.run_id = sol.run_id LEFT JOIN o ON true;

-- lattice_accuracy(tbl, reference_tbl): KGEN's accuracy of a solution (eq. 4 of
-- kgen-genetic-lattice-k-anonymity.txt) against the optimal one in `reference_tbl` (e.g. the output
-- of algo := 'optimal' on the same table, QIs and hierarchies):
--   1 - |H(S) - H(opt)| / (H(worst) - H(opt)), H = height of a lattice node = sum of its levels,
--   worst = the top of the lattice (every QI at the root; sum of the heights).
-- Both runs must be full-domain runs that recorded their node (kanon_runs.details 'node',
-- 'height'). 1 when the optimum is the top itself and the solution equals it.
-- lattice_accuracy(tbls, reference_tbl, weights): eq. 5, the "general accuracy": the weighted
-- arithmetic mean sum_i w_i acc_i / sum_i w_i over several solutions `tbls` (a list of tables, e.g.
-- KGEN runs with different seeds); weights NULL = equal weights (the paper leaves w_i open).
CREATE OR REPLACE MACRO lattice_accuracy(tbl, reference_tbl) AS (
    SELECT acc FROM kanon_lattice_acc([__kanon_meta(tbl).run_id], __kanon_meta(reference_tbl).run_id)
),
(tbls, reference_tbl, weights) AS (
    SELECT CASE
        WHEN weights IS NOT NULL AND len(weights) <> len(tbls) THEN
            error('lattice_accuracy: ' || len(weights)::VARCHAR || ' weights for '
                  || len(tbls)::VARCHAR || ' tables; give one weight per table (or NULL)')
        WHEN len(tbls) = 0 THEN error('lattice_accuracy: the list of tables is empty')
        ELSE (SELECT sum(coalesce(CAST(weights AS DOUBLE[])[pos], 1.0) * acc)
                     / sum(coalesce(CAST(weights AS DOUBLE[])[pos], 1.0))
              FROM kanon_lattice_acc(list_transform(tbls, lambda t: __kanon_meta(t).run_id),
                                     __kanon_meta(reference_tbl).run_id))
    END
);
