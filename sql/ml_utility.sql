-- classification_utility(raw_tbl, anon_tbl, label, models, seed, test_fraction, qi, encoding, features)
--
-- Classifier utility of an anonymized table (cof-mondrian-outliers.txt §4.2.5-4.2.6, Figs. 8-11):
-- each model is trained on the anonymized rows (generalized values encoded as range midpoints /
-- taxonomy leaf-range midpoints) and on the raw rows of the same train side, and both are tested
-- on held-out raw rows. One row per model:
--   model, accuracy_anon, f1_anon, accuracy_raw, f1_raw, n_train (anonymized training rows),
--   n_test (raw test rows), split ('disjoint': no test record is in training; 'overlap':
--   fallback when the non-QI columns have too few distinct values, see kanon_duckdb/ml_utility.py).
-- F-measure: F1 of the rarer class for a binary label (e.g. '>50K' on Adult), else macro F1.
-- models: 'knn', 'svm', 'rf', 'nb' (default), 'dt', 'lr'. encoding: 'ordinal' or 'onehot'.
-- features: 'qi' (default: the published QIs only) or 'all' (also the unchanged non-QI columns).
-- qi: only needed when anon_tbl has no kanon_run column. Needs the [ml] extra (scikit-learn).
-- raw_tbl, anon_tbl: any relation the metric macros read (tables, views, files, objects registered
-- on the caller's connection or cursor: coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT names the caller to the UDF).
CREATE OR REPLACE MACRO classification_utility(raw_tbl, anon_tbl, label,
        models := ['knn', 'svm', 'rf', 'nb'], seed := 0, test_fraction := 0.3, qi := NULL,
        encoding := 'ordinal', features := 'qi') AS TABLE
SELECT unnest(__kanon_ml(raw_tbl, anon_tbl, label, models, seed, test_fraction, qi, encoding,
                         features, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT),
              recursive := true)
WHERE __kanon_unshadowed(raw_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT)
  AND __kanon_unshadowed(anon_tbl, coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT);
