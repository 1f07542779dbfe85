-- A tour of kanon-duckdb in SQL on the Adult data set.
-- Run:  kanon-duckdb demo --db adult.duckdb --k 10      (loads adult and its taxonomies)
--       kanon-duckdb shell adult.duckdb < examples/adult_tour.sql

-- 1. Taxonomy trees are rows of kanon_taxonomy(attr, child, parent); the root has parent NULL.
SELECT attr, count(*) AS edges FROM kanon_taxonomy GROUP BY attr ORDER BY attr;
SELECT * FROM kanon_taxonomy WHERE attr = 'workclass';

-- 2. Anonymize: one output row per input row; numeric QIs become <c>_min/<c>_max,
--    categorical QIs the label of their class's lowest common ancestor.
CREATE OR REPLACE TABLE adult_k10 AS
  FROM k_anonymize('adult', k := 10, algo := 'mondrian',
                   qi := ['age', 'education_num', 'workclass', 'marital_status', 'occupation',
                          'race', 'sex', 'native_country']);
SELECT age_min, age_max, education_num_min, education_num_max, workclass, marital_status, sex,
       ec, ec_size
FROM adult_k10 ORDER BY ec LIMIT 10;

-- 3. Check: the smallest class has at least k rows.
SELECT min(ec_size) AS smallest_class, count(DISTINCT ec) AS classes FROM adult_k10;

-- 4. Measure: the metrics read the anonymized table, kanon_runs and the taxonomies.
SELECT round(100 * gcp('adult_k10'), 2) AS gcp_percent,
       discernibility('adult_k10') AS dm,
       round(cavg('adult_k10'), 3) AS cavg,
       round(gen_total_il('adult_k10'), 4) AS gen_total_il;

-- 5. Compare a query on raw and anonymized data.
SELECT * FROM query_error('SELECT count(*) FROM adult WHERE age > 55 AND race = ''White''',
                          'adult', 'adult_k10');

-- 6. Every run is recorded.
SELECT run_id, source, k, algo, n_rows, n_classes, round(elapsed_s, 3) AS seconds
FROM kanon_runs ORDER BY run_id DESC LIMIT 5;
