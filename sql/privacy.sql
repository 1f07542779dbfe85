-- Privacy checks that work on raw and on anonymized tables (issue 5 §3).
--
-- `qi` lists quasi-identifiers by their ORIGINAL names. On an anonymized table a numeric QI `c`
-- is published as c_min/c_max and is looked up as that pair when `c` itself is not a column
-- (__kanon_qi_cols, udfs/metrics.py, folded at bind time; unknown names are an error that lists
-- the table's columns). Equivalence classes are the groups of rows with equal values in those
-- columns (NULL equals NULL). On an anonymized table (it has `suppressed` and `kanon_run`)
-- suppressed rows are left out: they are published fully generalized and flagged, as if removed,
-- so they form no class and do not count in the distributions below.

-- kanon_qi_keys(tbl, qi): one row per row that forms classes: g = the row's QI values (an unnamed
-- STRUCT, the class key).
CREATE OR REPLACE MACRO kanon_qi_keys(tbl, qi) AS TABLE
SELECT row(*COLUMNS(lambda x: list_contains(__kanon_qi_cols(tbl, qi).cols, x))) AS g
FROM (SELECT *, false AS __kanon_nosup FROM __kanon_read(tbl))
WHERE NOT coalesce(COLUMNS(lambda x: x = __kanon_qi_cols(tbl, qi).sup_col), false);

-- k_anonymity(tbl, qi): size of the smallest equivalence class (Sweeney 2002); NULL if no row.
CREATE OR REPLACE MACRO k_anonymity(tbl, qi) AS (
    SELECT min(n) FROM (SELECT count(*) AS n FROM kanon_qi_keys(tbl, qi) GROUP BY g)
);

-- kanon_qi_rows(tbl, qi, col): the rows that form classes, as (g, v): g = the row's QI values
-- (an unnamed STRUCT, the class key), v = column `col` (the sensitive attribute).
CREATE OR REPLACE MACRO kanon_qi_rows(tbl, qi, col) AS TABLE
SELECT row(*COLUMNS(lambda x: list_contains(__kanon_qi_cols(tbl, qi).cols, x))) AS g,
       COLUMNS(lambda x: x = __kanon_column(tbl, col)) AS v
FROM (SELECT *, false AS __kanon_nosup FROM __kanon_read(tbl))
WHERE NOT coalesce(COLUMNS(lambda x: x = __kanon_qi_cols(tbl, qi).sup_col), false);

-- l_diversity(tbl, qi, sensitive, c := NULL) -> STRUCT("distinct" BIGINT, entropy DOUBLE,
--                                                       recursive BIGINT)
--   distinct:  the smallest number of distinct sensitive values in a class (distinct l-diversity);
--   entropy:   exp of the smallest class entropy -sum p ln p (entropy l-diversity, Machanavajjhala
--              et al. 2007: the table is entropy l-diverse for every l <= this value);
--   recursive: with c given, the largest l for which every class is recursive (c,l)-diverse:
--              r_1 < c (r_l + ... + r_m), r = the class's value counts in descending order
--              (0 when some class fails even l = 1); NULL without c.
--   A NULL sensitive value counts as one value. Same definitions as kanon_duckdb/privacy/models.py.
CREATE OR REPLACE MACRO l_diversity(tbl, qi, sensitive, c := NULL) AS (
    WITH __kl_cnt AS (
        SELECT g, v, count(*) AS n FROM kanon_qi_rows(tbl, qi, sensitive) GROUP BY ALL
    ),
    __kl_ranked AS (   -- tail = r_i + ... + r_m for the i-th largest count r_i
        SELECT g, n, row_number() OVER w AS i, max(n) OVER (PARTITION BY g) AS r1,
               sum(n) OVER (PARTITION BY g ORDER BY n ASC, v ASC NULLS FIRST ROWS UNBOUNDED PRECEDING) AS tail,
               sum(n) OVER (PARTITION BY g) AS tot
        FROM __kl_cnt WINDOW w AS (PARTITION BY g ORDER BY n DESC, v DESC NULLS LAST)
    ),
    __kl_cls AS (
        SELECT g, count(*) AS n_distinct,
               -sum((n / tot) * ln(n / tot)) AS entropy,
               coalesce(max(i) FILTER (WHERE r1 < c * tail), 0) AS rec
        FROM __kl_ranked
        GROUP BY g
    )
    SELECT {'distinct': min(n_distinct), 'entropy': exp(min(entropy)),
            'recursive': CASE WHEN c IS NULL THEN NULL ELSE min(rec) END::BIGINT} FROM __kl_cls
);

-- kanon_sensitive_all(tbl, col): the sensitive column `col` of EVERY row (suppressed rows too: they
-- publish their sensitive value), as v: the table distribution t-closeness compares with.
CREATE OR REPLACE MACRO kanon_sensitive_all(tbl, col) AS TABLE
SELECT COLUMNS(lambda x: x = __kanon_column(tbl, col)) AS v FROM __kanon_read(tbl);

-- t_closeness(tbl, qi, sensitive, distance := NULL): the largest Earth Mover's Distance between a
-- class's distribution of the sensitive attribute and the whole table's (Li et al. 2007), in
-- [0, 1]. The table's distribution p counts every row (suppressed ones too); classes exclude
-- suppressed rows. `distance` (default: 'ordered' for a numeric column, 'hierarchical' when
-- kanon_taxonomy has a tree for it, attr '<table>.<column>' or else '<column>' as k_anonymize
-- resolves trees, else 'equal'):
--   'equal':        EMD = 1/2 sum_v |q_v - p_v|.
--   'ordered':      over the m distinct values v1 < ... < vm of the table (NULL first):
--                   EMD = sum_i |sum_{j<=i} (q_j - p_j)| / (m - 1); cost O(classes * m).
--   'hierarchical': ground distance height(LCA) / height(tree) in the sensitive attribute's tree:
--                   EMD = sum over inner nodes N of height(N)/H * min(pos(N), neg(N)), where
--                   extra(N) = sum over values under N of (p - q), pos/neg(N) = the sums of the
--                   positive / negative extras of N's children (Li et al. 2007, Theorem 4 ff.);
--                   a NULL value is a leaf under the root.
--   0 when the sensitive attribute has a single value. Same definitions as
--   kanon_duckdb/privacy/_kernels.py (emd_equal, emd_ordered, emd_hierarchical).
CREATE OR REPLACE MACRO t_closeness(tbl, qi, sensitive, distance := NULL) AS (
    WITH RECURSIVE __kt_r AS MATERIALIZED (FROM kanon_qi_rows(tbl, qi, sensitive)),
    __kt_a AS MATERIALIZED (FROM kanon_sensitive_all(tbl, sensitive)),
    __kt_attr AS (   -- the sensitive attribute's tree (kanon_duckdb/taxonomy/store.py resolution)
        SELECT __kanon_tree_attr(tbl, sensitive) AS attr
    ),
    __kt_kind AS (
        SELECT CASE
            WHEN distance IS NOT NULL THEN lower(distance)
            WHEN (SELECT coalesce(any_value(typeof(v)) IN ('TINYINT', 'SMALLINT', 'INTEGER',
                    'BIGINT', 'HUGEINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT',
                    'UHUGEINT', 'FLOAT', 'DOUBLE') OR any_value(typeof(v)) LIKE 'DECIMAL%', false)
                  FROM __kt_a) THEN 'ordered'
            WHEN EXISTS (SELECT 1 FROM kanon_taxonomy WHERE attr = (SELECT attr FROM __kt_attr))
                THEN 'hierarchical'
            ELSE 'equal' END AS d
    ),
    __kt_gdist AS (   -- p: the table's distribution; ord: rank of the value
        SELECT v, count(*) / (SELECT count(*) FROM __kt_a) AS p,
               row_number() OVER (ORDER BY v NULLS FIRST) AS ord
        FROM __kt_a GROUP BY v
    ),
    __kt_m AS (SELECT count(*) AS m FROM __kt_gdist),
    __kt_cls AS (
        SELECT g, v, count(*) / sum(count(*)) OVER (PARTITION BY g) AS q FROM __kt_r GROUP BY g, v
    ),
    __kt_equal_d AS (   -- 1/2 (sum over the class's values |q - p| + sum over the others p)
        SELECT __kt_cls.g, 0.5 * (sum(abs(__kt_cls.q - __kt_gdist.p) - __kt_gdist.p) + 1.0) AS emd
        FROM __kt_cls JOIN __kt_gdist ON __kt_gdist.v IS NOT DISTINCT FROM __kt_cls.v
        WHERE (SELECT d FROM __kt_kind) = 'equal'
        GROUP BY __kt_cls.g
    ),
    __kt_diff AS (   -- p - q for every class and every value of the table
        SELECT c.g, __kt_gdist.v, __kt_gdist.ord, __kt_gdist.p - coalesce(__kt_cls.q, 0.0) AS dq
        FROM (SELECT DISTINCT g FROM __kt_cls) c
        CROSS JOIN __kt_gdist
        LEFT JOIN __kt_cls ON __kt_cls.g = c.g AND __kt_cls.v IS NOT DISTINCT FROM __kt_gdist.v
        WHERE (SELECT d FROM __kt_kind) IN ('ordered', 'hierarchical')
    ),
    __kt_ordered_d AS (
        SELECT g, sum(abs(cum)) / nullif((SELECT m FROM __kt_m) - 1, 0) AS emd
        FROM (SELECT g, -sum(dq) OVER (PARTITION BY g ORDER BY ord) AS cum
              FROM __kt_diff WHERE (SELECT d FROM __kt_kind) = 'ordered')
        GROUP BY g
    ),
    __kt_tnodes AS (
        SELECT node, sub_height, height FROM kanon_taxonomy_nodes()
        WHERE attr = (SELECT attr FROM __kt_attr)
    ),
    __kt_edges AS (   -- child -> parent, plus the NULL value's leaf under the root
        SELECT DISTINCT child, parent FROM kanon_taxonomy
        WHERE attr = (SELECT attr FROM __kt_attr) AND child IS NOT NULL AND parent IS NOT NULL
        UNION ALL
        SELECT '__kanon_null_leaf', (SELECT node FROM __kt_tnodes WHERE sub_height = height LIMIT 1)
    ),
    __kt_up(leaf, node) AS (   -- each value's leaf and its ancestors
        SELECT DISTINCT coalesce(v::VARCHAR, '__kanon_null_leaf'), coalesce(v::VARCHAR, '__kanon_null_leaf')
        FROM __kt_gdist WHERE (SELECT d FROM __kt_kind) = 'hierarchical'
        UNION
        SELECT u.leaf, e.parent FROM __kt_up u JOIN __kt_edges e ON e.child = u.node
    ),
    __kt_extra AS (   -- extra(g, N) = sum over the values under N of (p - q)
        SELECT __kt_diff.g, __kt_up.node, sum(__kt_diff.dq) AS x
        FROM __kt_diff JOIN __kt_up ON __kt_up.leaf = coalesce(__kt_diff.v::VARCHAR, '__kanon_null_leaf')
        GROUP BY __kt_diff.g, __kt_up.node
    ),
    __kt_hier_d AS (
        SELECT g, sum(w * least(pos, neg)) AS emd
        FROM (
            SELECT __kt_extra.g, e.parent,
                   sum(greatest(__kt_extra.x, 0.0)) AS pos, sum(greatest(-__kt_extra.x, 0.0)) AS neg,
                   any_value(t.sub_height / nullif(t.height, 0)) AS w
            FROM __kt_extra JOIN __kt_edges e ON e.child = __kt_extra.node
            JOIN __kt_tnodes t ON t.node = e.parent
            GROUP BY __kt_extra.g, e.parent
        )
        GROUP BY g
    )
    SELECT CASE (SELECT d FROM __kt_kind)
        WHEN 'ordered' THEN coalesce((SELECT max(emd) FROM __kt_ordered_d), 0.0)
        WHEN 'hierarchical' THEN CASE WHEN NOT EXISTS (SELECT 1 FROM __kt_tnodes)
            THEN error('t_closeness: distance := ''hierarchical'' needs a tree of ''' || sensitive
                       || ''' in kanon_taxonomy (attr = ''' || sensitive || ''')')
            ELSE greatest(coalesce((SELECT max(emd) FROM __kt_hier_d), 0.0), 0.0) END
        WHEN 'equal' THEN greatest(coalesce((SELECT max(emd) FROM __kt_equal_d), 0.0), 0.0)
        ELSE error('t_closeness: distance must be ''equal'', ''ordered'' or ''hierarchical'', got '''
                   || distance || '''') END
);

-- reidentification_risk(tbl, qi, threshold := 0.2, population := NULL) -> STRUCT: re-identification
-- risk (El Emam & Dankar 2008; ARX's risk models). f_j = rows of class j in `tbl` (suppressed rows
-- form no class), F_j = rows of the same QI values in `population` (a table holding the whole
-- population the rows were drawn from, with the same QI columns; without it the table is its own
-- population, F_j = f_j; F_j is at least f_j):
--   max_risk            prosecutor: 1 / smallest class (the attacker knows the target is in tbl)
--   avg_risk            prosecutor: mean risk over records = classes / records
--   records_at_risk     share of records whose prosecutor risk exceeds `threshold` (0.2: classes of
--                       fewer than 5 rows)
--   unique_share        share of records alone in their class
--   journalist_risk     journalist: 1 / smallest F_j over the classes of tbl (the attacker matches
--                       a target from the population, not knowing whether it is in tbl)
--   marketer_risk       marketer: expected share of records re-identified when every record is
--                       matched, (1 / records) * sum_j f_j / F_j (= avg_risk without population)
--   classes, records
-- On an anonymized table the population is matched on the published QI columns, so pass the raw
-- table's population only together with the raw table (or a population generalized the same way).
CREATE OR REPLACE MACRO reidentification_risk(tbl, qi, threshold := 0.2, population := NULL) AS (
    WITH __kr_cls AS (
        SELECT g, count(*) AS n FROM kanon_qi_keys(tbl, qi) GROUP BY g
    ),
    __kr_pop AS (
        SELECT g, count(*) AS big_n FROM kanon_qi_keys(coalesce(population, tbl), qi) GROUP BY g
    ),
    __kr_j AS (
        SELECT c.n, greatest(coalesce(p.big_n, c.n), c.n) AS big_n
        FROM __kr_cls c LEFT JOIN __kr_pop p ON p.g IS NOT DISTINCT FROM c.g
    )
    SELECT {'max_risk': 1.0 / min(n),
            'avg_risk': count(*) / sum(n),
            'records_at_risk': coalesce(sum(n) FILTER (WHERE 1.0 / n > threshold), 0) / sum(n),
            'unique_share': coalesce(sum(n) FILTER (WHERE n = 1), 0) / sum(n),
            'journalist_risk': 1.0 / min(big_n),
            'marketer_risk': sum(n / big_n) / sum(n),
            'classes': count(*),
            'records': sum(n)::BIGINT}
    FROM __kr_j
);
