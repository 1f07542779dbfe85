-- Query error rate on Adult: the four queries of Kara & Eyupoglu (2023), section 4.2.4
-- (shared/papers/cof-mondrian-outliers.txt, Fig. 7), raw table vs Mondrian k = 10.
-- Run:  kanon-duckdb demo --db adult.duckdb --k 10      (loads adult and its taxonomies)
--       kanon-duckdb shell adult.duckdb < examples/query_error_adult.sql
--
-- The paper writes the age conditions against the published lower bound (Age_Min = 35, > 55,
-- > 70). Here each query is written against the raw table (age = 35, ...); query_error runs it
-- there (A) and estimates it on the anonymized table (a), each row counting with the fraction of
-- its [age_min, age_max] range and of the taxonomy leaves under its labels that satisfy the
-- WHERE clause. rel_error = |A - a| / A (the paper's eq. 8).

CREATE OR REPLACE TABLE adult_k10 AS
  FROM k_anonymize('adult', k := 10, algo := 'mondrian',
                   qi := ['age', 'workclass', 'education', 'marital_status', 'occupation',
                          'race', 'sex', 'native_country']);

-- The four queries as a workload table (a TEMP table would do too).
CREATE OR REPLACE TABLE cof_mondrian_queries (qid BIGINT, sql VARCHAR);
INSERT INTO cof_mondrian_queries VALUES
  (1, 'SELECT COUNT(*) FROM adult WHERE (workclass = ''Private'' OR workclass = ''Self-emp-not-inc'' OR workclass = ''Self-emp-inc'') AND age = 35'),
  (2, 'SELECT COUNT(*) FROM adult WHERE race = ''Black'' AND native_country = ''United-States'''),
  (3, 'SELECT COUNT(*) FROM adult WHERE (workclass = ''Private'' OR workclass = ''Self-emp-not-inc'' OR workclass = ''Self-emp-inc'') AND age > 55 AND race = ''White'''),
  (4, 'SELECT COUNT(*) FROM adult WHERE (workclass = ''Private'' OR workclass = ''Self-emp-not-inc'' OR workclass = ''Self-emp-inc'') AND age > 70 AND race = ''White''');

-- Raw answer, estimate and relative error of each query.
SELECT 'Query' || e.qid AS query, e.raw_value, round(e.anon_estimate, 1) AS anon_estimate,
       round(e.rel_error, 4) AS rel_error
FROM workload_query_errors('cof_mondrian_queries', 'adult', 'adult_k10') AS e
ORDER BY e.qid;

-- The same for one query with query_error, and the SQL that computed its estimate.
FROM query_error('SELECT COUNT(*) FROM adult WHERE race = ''Black'' AND native_country = ''United-States''',
                 'adult', 'adult_k10');
SELECT kanon_rewrite(sql, 'adult_k10') AS rewritten FROM cof_mondrian_queries WHERE qid = 3;

-- GROUP BY a non-QI column compares group by group.
FROM query_error('SELECT income, COUNT(*) AS n, AVG(hours_per_week) AS hours FROM adult WHERE age > 55 AND race = ''White'' GROUP BY income',
                 'adult', 'adult_k10');

-- A random workload in the style of LeFevre et al. (2006): 1,000 COUNT(*) queries over 2 QIs.
CREATE OR REPLACE TABLE adult_workload AS FROM query_workload('adult', n := 1000, seed := 0, dims := 2);
FROM workload_error('adult_workload', 'adult', 'adult_k10');
