-- kanon_help(): every kanon-duckdb macro with its kind, parameters and description (the first
-- sentence of the comment above its definition in sql/, see kanon_duckdb/help.py).
CREATE OR REPLACE MACRO kanon_help() AS TABLE
SELECT function_name AS name,
       CASE function_type WHEN 'table_macro' THEN 'table' ELSE 'scalar' END AS kind,
       parameters, comment AS description
FROM duckdb_functions()
WHERE list_contains(/*KANON_MACRO_NAMES*/, function_name)
  AND function_type IN ('macro', 'table_macro')
ORDER BY name, len(parameters);
