-- What a task run's model calls cost (calls, tokens, time, cost), as JSON of
-- `ModelSpend`; NULL for runs that called no model or ran before this column.
ALTER TABLE runs ADD COLUMN model_json TEXT;
