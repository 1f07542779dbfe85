-- Two tables with a column of the same name and different domains, each with its own tree.
-- Run:  kanon-duckdb shell < examples/two_tables_same_column.sql
--
-- Which tree a QI uses (first match wins): the tree a call names (taxonomies := {...}), then the
-- rows with attr = '<table>.<column>', then the rows with attr = '<column>'.

CREATE OR REPLACE TABLE staff AS
SELECT 30 + 10 * (i % 3) AS age, CASE WHEN (i // 3) % 20 < 4 THEN 'Male' ELSE 'Female' END AS sex
FROM range(60) t(i);

CREATE OR REPLACE TABLE patients AS
SELECT 30 + 10 * (i % 3) AS age,
       CASE WHEN i // 3 < 5 THEN 'F' WHEN i // 3 < 10 THEN 'M' ELSE 'X' END AS sex
FROM range(72) t(i);

-- The tree of every column named sex (Male/Female) ...
DELETE FROM kanon_taxonomy WHERE attr IN ('sex', 'patients.sex', 'sex_flat');
INSERT INTO kanon_taxonomy VALUES ('sex', '*', NULL), ('sex', 'Male', '*'), ('sex', 'Female', '*');
-- ... and the tree of patients.sex (F/M/X), which wins for that table.
INSERT INTO kanon_taxonomy VALUES
  ('patients.sex', '*', NULL), ('patients.sex', 'F or M', '*'),
  ('patients.sex', 'F', 'F or M'), ('patients.sex', 'M', 'F or M'), ('patients.sex', 'X', '*');

CREATE OR REPLACE TABLE staff_k6 AS FROM k_anonymize('staff', k := 6, qi := ['age', 'sex']);
CREATE OR REPLACE TABLE patients_k6 AS FROM k_anonymize('patients', k := 6, qi := ['age', 'sex']);

-- Each output publishes labels of its own tree.
SELECT 'staff_k6' AS output, sex, count(*) AS n FROM staff_k6 GROUP BY ALL
UNION ALL
SELECT 'patients_k6', sex, count(*) FROM patients_k6 GROUP BY ALL
ORDER BY output, sex;

-- Every run records the tree of each QI; the metrics of an output use that tree.
SELECT run_id, source, qi, qi_trees FROM kanon_runs ORDER BY run_id DESC LIMIT 2;
SELECT gcp('staff_k6') AS gcp_staff, gcp('patients_k6') AS gcp_patients;

-- A call can name the tree to use: here a flat tree built under its own name.
SELECT kanon_build_flat('patients', 'sex', attr := 'sex_flat') AS edges;
CREATE OR REPLACE TABLE patients_k6_flat AS
  FROM k_anonymize('patients', k := 6, qi := ['age', 'sex'], taxonomies := {'sex': 'sex_flat'});
SELECT DISTINCT sex FROM patients_k6_flat ORDER BY sex;

-- The published value of each class (local recoding: one box per class and QI).
FROM kanon_mapping('patients_k6') ORDER BY ec, qi LIMIT 6;
