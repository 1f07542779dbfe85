-- Anonymize a Parquet file into a Parquet file in one SQL statement, without a copy step and
-- without holding the whole output in memory (DuckDB streams the second read into COPY).
-- Run:  kanon-duckdb shell < examples/parquet_to_parquet.sql
--       (writes people.parquet and people_k5.parquet in the current directory)

COPY (SELECT i AS person_id,
             20 + (i * 13) % 60 AS age,
             'z' || (80000 + (i * 37) % 40) AS zip,
             CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END AS sex,
             ['flu', 'cold', 'asthma', 'none'][1 + i % 4] AS diagnosis
      FROM range(10000) t(i))
TO 'people.parquet';

-- the one statement: Parquet in, Parquet out (a glob such as 'dir/*.parquet' works too)
COPY (FROM k_anonymize('people.parquet', k := 5, qi := ['age', 'zip', 'sex']))
TO 'people_k5.parquet';

-- the output keeps the input's column order: age became age_min, age_max in place
SELECT * FROM 'people_k5.parquet' LIMIT 5;

-- metrics and checks read the file directly
SELECT gcp('people_k5.parquet') AS gcp, discernibility('people_k5.parquet') AS dm,
       k_anonymity('people_k5.parquet', ['age', 'zip', 'sex']) AS min_class;

-- a TEMP table (or a table created earlier in an open transaction) is read in this query too
CREATE TEMP TABLE people_flu AS FROM 'people.parquet' WHERE diagnosis = 'flu';
SELECT count(*) AS rows, min(ec_size) AS min_class
FROM k_anonymize('people_flu', k := 5, qi := ['age', 'zip', 'sex']);

-- and so is a TEMP output by the metrics and checks (same values as on a regular table)
CREATE TEMP TABLE people_flu_k5 AS FROM k_anonymize('people_flu', k := 5, qi := ['age', 'zip', 'sex']);
SELECT gcp('people_flu_k5') AS gcp, k_anonymity('people_flu_k5', ['age', 'zip', 'sex']) AS min_class;
