-- Taxonomy trees for your own table: plain INSERTs and the builders.
-- Run:  kanon-duckdb shell < examples/custom_taxonomy.sql

CREATE OR REPLACE TABLE staff AS
SELECT i AS id,
       20 + (i * 7) % 45 AS age,
       (80000 + (i * 37) % 60)::VARCHAR AS zip,
       ['Physics', 'Biology', 'History', 'Music'][1 + i % 4] AS dept,
       DATE '1960-01-01' + INTERVAL (i * 97 % 15000) DAY AS birth,
       ['A', 'B', 'C'][1 + i % 3] AS grade
FROM range(200) t(i);

-- A tree written by hand: the root has parent NULL; insertion order fixes the leaf order.
DELETE FROM kanon_taxonomy WHERE attr = 'dept';
INSERT INTO kanon_taxonomy VALUES
  ('dept', '*', NULL),
  ('dept', 'Science', '*'), ('dept', 'Arts', '*'),
  ('dept', 'Physics', 'Science'), ('dept', 'Biology', 'Science'),
  ('dept', 'History', 'Arts'), ('dept', 'Music', 'Arts');
SELECT kanon_check_taxonomy('staff', 'dept') AS dept_tree;

-- Builders: masking for codes (80015 -> 8001* -> ... -> *****), dates, nested intervals.
SELECT kanon_build_masking('staff', 'zip') AS zip_edges,
       kanon_build_dates('staff', 'birth') AS birth_edges,
       kanon_build_intervals('staff', 'age', [5, 10, 20]) AS age_edges;
SELECT * FROM kanon_taxonomy WHERE attr = 'zip' LIMIT 8;

-- zip is text, so it is categorical and generalized along its masking tree.
CREATE OR REPLACE TABLE staff_k5 AS
  FROM k_anonymize('staff', k := 5, qi := ['age', 'zip', 'dept']);
SELECT age_min, age_max, zip, dept, grade, ec_size FROM staff_k5 ORDER BY ec LIMIT 10;
SELECT round(100 * gcp('staff_k5'), 2) AS gcp_percent, min(ec_size) AS smallest FROM staff_k5;
