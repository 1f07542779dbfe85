-- Metrics, part 1: utility of an anonymized table (DESIGN.md "Metrics"). All take the name of a
-- table produced by k_anonymize (a string) and read it, kanon_runs and kanon_taxonomy afresh.
-- N = rows, d = QIs, E = classes (distinct ec). Suppressed rows (column `suppressed`) are kept in the
-- table; they count as fully generalized (NCP 1) on every QI, N each in DM, and they do not count as
-- classes in C_avg (their rows do count in N there, which charges suppression to C_avg too).

-- Per-QI weights: a run made with weights := {'age': 2.0, ...} weights each QI q by w_q in gcp,
-- total_il and gen_total_il (kanon_qi_loss.weight = w_q * d / sum w, mean 1; 1 without weights):
-- the mean over QIs becomes sum_q w_q NCP_q / sum_q w_q.

-- What discernibility, cavg, suppression and cm read, __kanon_output(tbl): the table (every
-- column) after the check that it is an output of k_anonymize; its COLUMNS list is folded when
-- the macro is bound, so a table without ec / kanon_run / suppressed gets that error
-- (published.output_columns) instead of a binder error on the missing column.
CREATE OR REPLACE MACRO __kanon_output(tbl) AS TABLE
    SELECT COLUMNS(__kanon_output_cols(tbl))
    FROM __kanon_read(tbl);

-- gcp(tbl): Global Certainty Penalty (Ghinita et al. 2009) as a fraction in [0, 1]:
--   sum over classes |e| * (weighted) mean over QIs of NCP(e, qi), divided by N.
CREATE OR REPLACE MACRO gcp(tbl) AS (
    SELECT sum(weight * ncp_sum) / sum(n) FROM kanon_qi_loss(tbl)
);

-- total_il(tbl): Byun et al. 2007 total information loss:
--   sum over classes |e| * (sum numeric (max - min) / range + sum categorical
--   height(LCA subtree) / height(tree)), each QI's term times its weight.
CREATE OR REPLACE MACRO total_il(tbl) AS (
    SELECT sum(weight * il_sum) FROM kanon_qi_loss(tbl)
);

-- gen_total_il(tbl): total_il / (N * d), in [0, 1].
CREATE OR REPLACE MACRO gen_total_il(tbl) AS (
    SELECT sum(weight * il_sum) / sum(n) FROM kanon_qi_loss(tbl)
);

-- discernibility(tbl): DM (Bayardo & Agrawal 2005) = sum over non-suppressed classes |e|^2
--   + N for each suppressed row.
CREATE OR REPLACE MACRO discernibility(tbl) AS (
    WITH cls AS (
        SELECT count(*) AS size, bool_or(suppressed) AS sup
        FROM __kanon_output(tbl) GROUP BY kanon_run, ec
    )
    SELECT (coalesce(sum(size * size) FILTER (WHERE NOT sup), 0)
            + coalesce(sum(size) FILTER (WHERE sup), 0) * sum(size))::HUGEINT
    FROM cls
);

-- cavg(tbl, k): normalized average class size (LeFevre et al. 2006) = (N / |E|) / k, with E the
--   non-suppressed classes; cavg(tbl) reads k from the table's run in kanon_runs.
--   NULL when every row is suppressed.
CREATE OR REPLACE MACRO cavg(tbl, k) AS (
    WITH cls AS (
        SELECT count(*) AS size, bool_or(suppressed) AS sup
        FROM __kanon_output(tbl) GROUP BY kanon_run, ec
    )
    SELECT sum(size) / nullif(count(*) FILTER (WHERE NOT sup), 0) / k FROM cls
),
(tbl) AS (
    WITH cls AS (
        SELECT kanon_run, count(*) AS size, bool_or(suppressed) AS sup
        FROM __kanon_output(tbl) GROUP BY kanon_run, ec
    )
    SELECT sum(size) / nullif(count(*) FILTER (WHERE NOT sup), 0)
           / (SELECT max(r.k) FROM kanon_runs r WHERE r.run_id IN (SELECT kanon_run FROM cls))
    FROM cls
);

-- suppression(tbl): suppressed rows / N.
CREATE OR REPLACE MACRO suppression(tbl) AS (
    SELECT avg(suppressed::INTEGER)::DOUBLE FROM __kanon_output(tbl)
);
