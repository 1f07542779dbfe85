-- Anonymize a table of an ATTACHed DuckDB file and write the result into that same file.
-- Run:  kanon-duckdb shell < examples/attached_database.sql
--       (creates clinic.duckdb in the current directory; the trees and kanon_runs live in the
--       shell's own database, here in memory)

ATTACH 'clinic.duckdb' AS clinic;

CREATE OR REPLACE TABLE clinic.main.visits AS
SELECT i AS visit_id,
       20 + (i * 13) % 60 AS age,
       (80000 + (i * 37) % 40)::VARCHAR AS zip,
       ['flu', 'cold', 'asthma', 'none'][1 + i % 4] AS diagnosis
FROM range(200) t(i);

-- A tree for this table's zip column ('<table>.<column>': the table's own name).
SELECT kanon_build_masking('clinic.main.visits', 'zip', attr := 'visits.zip') AS edges;

-- Source and destination in the attached file.
CREATE OR REPLACE TABLE clinic.main.visits_k5 AS
  FROM k_anonymize('clinic.main.visits', k := 5, qi := ['age', 'zip']);

SELECT k_anonymity('clinic.main.visits_k5', ['age', 'zip']) AS smallest_class,
       gcp('clinic.main.visits_k5') AS gcp, count(*) AS n_rows
FROM clinic.main.visits_k5;
SELECT age_min, age_max, zip, diagnosis, ec_size FROM clinic.main.visits_k5 ORDER BY ec LIMIT 5;

DETACH clinic;
