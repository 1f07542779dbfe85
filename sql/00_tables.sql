-- kanon_taxonomy: generalization trees as edges. A root row has parent NULL.
-- Children keep insertion order (rowid), which fixes the leaf order Mondrian splits along.
CREATE TABLE IF NOT EXISTS kanon_taxonomy (attr VARCHAR, child VARCHAR, parent VARCHAR);
