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
FROM (SELECT *, false AS __kanon_nosup FROM query_table(tbl))
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
FROM (SELECT *, false AS __kanon_nosup FROM query_table(tbl))
WHERE NOT coalesce(COLUMNS(lambda x: x = __kanon_qi_cols(tbl, qi).sup_col), false);

-- l_diversity(tbl, qi, sensitive) -> STRUCT("distinct" BIGINT, entropy DOUBLE)
--   distinct: the smallest number of distinct sensitive values in a class (distinct l-diversity);
--   entropy:  exp of the smallest class entropy -sum p ln p (entropy l-diversity, Machanavajjhala
--             et al. 2007: the table is entropy l-diverse for every l <= this value).
--   A NULL sensitive value counts as one value.
CREATE OR REPLACE MACRO l_diversity(tbl, qi, sensitive) AS (
    WITH cnt AS (
        SELECT g, v, count(*) AS c FROM kanon_qi_rows(tbl, qi, sensitive) GROUP BY ALL
    ),
    cls AS (
        SELECT g, count(*) AS n_distinct,
               -sum((c / tot) * ln(c / tot)) AS entropy
        FROM (SELECT *, sum(c) OVER (PARTITION BY g) AS tot FROM cnt)
        GROUP BY g
    )
    SELECT {'distinct': min(n_distinct), 'entropy': exp(min(entropy))} FROM cls
);

-- t_closeness(tbl, qi, sensitive): the largest Earth Mover's Distance between a class's
-- distribution of the sensitive attribute and the whole table's (Li et al. 2007), in [0, 1].
--   numeric sensitive (a numeric SQL type): ordered distance over the m distinct values
--     v1 < ... < vm of the table: EMD = sum_i |sum_{j<=i} (q_j - p_j)| / (m - 1);
--     cost O(classes * m) (a class's cumulative distribution is compared at every value).
--   otherwise equal distance: EMD = 1/2 sum_v |q_v - p_v|, from each class's own values.
--   0 when the sensitive attribute has a single value.
CREATE OR REPLACE MACRO t_closeness(tbl, qi, sensitive) AS (
    WITH r AS MATERIALIZED (FROM kanon_qi_rows(tbl, qi, sensitive)),
    is_num AS (
        SELECT coalesce(any_value(typeof(v)) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT',
               'HUGEINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'UHUGEINT', 'FLOAT',
               'DOUBLE') OR any_value(typeof(v)) LIKE 'DECIMAL%', false) AS yes
        FROM r
    ),
    gdist AS (   -- p: the table's distribution; ord: rank of the value
        SELECT v, count(*) / (SELECT count(*) FROM r) AS p,
               row_number() OVER (ORDER BY v NULLS FIRST) AS ord
        FROM r GROUP BY v
    ),
    m AS (SELECT count(*) AS m FROM gdist),
    cls AS (
        SELECT g, v, count(*) / sum(count(*)) OVER (PARTITION BY g) AS q FROM r GROUP BY g, v
    ),
    equal_d AS (   -- 1/2 (sum over the class's values |q - p| + sum over the others p)
        SELECT cls.g, 0.5 * (sum(abs(cls.q - gdist.p) - gdist.p) + 1.0) AS emd
        FROM cls JOIN gdist ON gdist.v IS NOT DISTINCT FROM cls.v
        GROUP BY cls.g
    ),
    ordered_d AS (
        SELECT g, sum(abs(cum)) / nullif((SELECT m FROM m) - 1, 0) AS emd
        FROM (
            SELECT c.g, sum(coalesce(cls.q, 0.0) - gdist.p)
                       OVER (PARTITION BY c.g ORDER BY gdist.ord) AS cum
            FROM (SELECT DISTINCT g FROM cls) c
            CROSS JOIN gdist
            LEFT JOIN cls ON cls.g = c.g AND cls.v IS NOT DISTINCT FROM gdist.v
            WHERE (SELECT yes FROM is_num)
        )
        GROUP BY g
    )
    SELECT CASE WHEN (SELECT yes FROM is_num)
                THEN coalesce((SELECT max(emd) FROM ordered_d), 0.0)
                ELSE greatest(coalesce((SELECT max(emd) FROM equal_d), 0.0), 0.0) END
);

-- reidentification_risk(tbl, qi, threshold := 0.2) -> STRUCT: prosecutor re-identification risk
-- (El Emam; ARX's prosecutor model), the risk of a record being 1 / size of its class:
--   max_risk        1 / smallest class
--   avg_risk        mean risk over records = classes / records
--   records_at_risk share of records whose risk exceeds `threshold` (0.2: classes of fewer
--                   than 5 rows)
--   unique_share    share of records alone in their class
--   classes, records
CREATE OR REPLACE MACRO reidentification_risk(tbl, qi, threshold := 0.2) AS (
    WITH cls AS (
        SELECT count(*) AS n FROM kanon_qi_keys(tbl, qi) GROUP BY g
    )
    SELECT {'max_risk': 1.0 / min(n),
            'avg_risk': count(*) / sum(n),
            'records_at_risk': coalesce(sum(n) FILTER (WHERE 1.0 / n > threshold), 0) / sum(n),
            'unique_share': coalesce(sum(n) FILTER (WHERE n = 1), 0) / sum(n),
            'classes': count(*),
            'records': sum(n)::BIGINT}
    FROM cls
);
